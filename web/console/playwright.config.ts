// Browser tests of the console in the system's headless Chromium (Debian `chromium`; Playwright's
// own browser builds are never downloaded). tests/web/*.py start the workers and run one spec
// each with FERRY_URL set; screenshots land in FERRY_WEB_ARTIFACTS.
import { defineConfig } from "@playwright/test";

export default defineConfig({
  testDir: "tests",
  timeout: 120_000,
  expect: { timeout: 15_000 },
  workers: 1,
  retries: 0,
  reporter: [["list"]],
  outputDir: process.env.FERRY_WEB_ARTIFACTS || "test-results",
  use: {
    baseURL: process.env.FERRY_URL,
    browserName: "chromium",
    headless: true,
    viewport: { width: 1400, height: 900 },
    screenshot: "on",
    trace: "retain-on-failure",
    launchOptions: {
      executablePath: process.env.FERRY_CHROMIUM || "/usr/bin/chromium",
      args: ["--no-sandbox", "--disable-dev-shm-usage"],
    },
  },
});
