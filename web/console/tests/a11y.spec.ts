// Accessibility: axe-core finds no serious or critical violation on any page, and the main flows
// work from the keyboard alone.
import { test, expect, type Page } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import { shot, watchErrors } from "./helpers";

async function axe(page: Page, what: string) {
  const result = await new AxeBuilder({ page }).analyze();
  const bad = result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`);
  expect(bad, `serious or critical axe violations on ${what}`).toEqual([]);
  return result;
}

test("no serious or critical axe violation on any page", async ({ page }) => {
  const errors = watchErrors(page);
  await page.goto("/ui/#/overview");
  await expect(page.locator('tr[data-connector="demo"] .badge').first()).toHaveText("RUNNING");
  await expect(page.locator('tr[data-connector="broken"] .badge').first()).toHaveText(/FAILED|RUNNING/);
  await axe(page, "the overview");
  // The failed connector's trace dialog.
  await expect(page.locator('tr[data-connector="broken"]').getByRole("button", { name: "trace" })).toBeVisible({ timeout: 30_000 });
  await page.locator('tr[data-connector="broken"]').getByRole("button", { name: "trace" }).click();
  await expect(page.getByRole("dialog")).toContainText("not a file");
  await axe(page, "the trace dialog");
  await shot(page, "a11y-trace");
  await page.keyboard.press("Escape");
  await expect(page.getByRole("dialog")).toHaveCount(0);

  await page.goto("/ui/#/connectors/demo");
  await expect(page.getByRole("heading", { name: "Tasks" })).toBeVisible();
  await axe(page, "a connector's page");
  await page.goto("/ui/#/builder");
  await page.getByLabel("Start from a template").selectOption({ label: "MQTT → RocketMQ bridge with rules" });
  await expect(page.locator(".react-flow__node")).toHaveCount(3);
  await page.locator(".react-flow__node", { hasText: "MQTTSource" }).click();
  await expect(page.locator("#f-mqtt\\.topics")).toBeVisible();
  await axe(page, "the pipeline builder");
  await page.goto("/ui/#/rules");
  await expect(page.getByTestId("rule-editor").locator(".cm-content")).toBeVisible();
  await axe(page, "the rules page");
  await page.goto("/ui/#/loggers");
  await expect(page.getByRole("table", { name: "Loggers" })).toBeVisible();
  await axe(page, "the log levels page");
  await page.goto("/ui/#/connectors/demo");
  await expect.poll(async () => Number(await page.getByTestId("charts").getAttribute("data-points")), { timeout: 30_000 }).toBeGreaterThanOrEqual(2);
  await axe(page, "a connector's page with its charts");
  await page.goto("/ui/#/cluster");
  await expect(page.getByText("runs standalone")).toBeVisible();
  await axe(page, "the cluster page");
  errors.check();
});

test("a pipeline is built and deployed from the keyboard alone", async ({ page }) => {
  const errors = watchErrors(page);
  await page.goto("/ui/#/builder");
  await expect(page.locator('[data-plugin="DatagenSource"]')).toBeVisible();
  // Palette: find a plugin by typing, Tab to it, Enter adds it to the canvas (wired in order).
  const add = async (query: string) => {
    await page.getByLabel("Find a plugin").focus();
    await page.keyboard.press("Control+a");
    await page.keyboard.type(query);
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
  };
  await add("DatagenSource");
  await add("Rule");
  await add("BlackholeSink");
  await expect(page.locator(".react-flow__node")).toHaveCount(3);
  await expect(page.locator(".react-flow__edge")).toHaveCount(2);
  // The node list opens each node's form; its fields take typed values.
  await page.getByRole("list", { name: "Nodes" }).getByRole("button", { name: /source: DatagenSource/ }).focus();
  await page.keyboard.press("Enter");
  await page.locator("#f-topic").focus();
  await page.keyboard.type("kbd");
  await page.getByRole("list", { name: "Nodes" }).getByRole("button", { name: /transform: Rule/ }).focus();
  await page.keyboard.press("Enter");
  await page.locator("#f-sql").focus();
  await page.keyboard.type('SELECT * FROM "#"');
  await page.getByLabel("Name").first().focus();
  await page.keyboard.type("kbd-pipeline");
  await page.keyboard.press("Enter"); // submits the pipeline form: Deploy
  await expect(page.getByRole("status")).toContainText("saved and deployed");
  await shot(page, "a11y-keyboard-deployed");
  // Focus is visible on the focused control.
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Overview" }).focus();
  const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
  expect(outline).not.toBe("none");
  errors.check();
});
