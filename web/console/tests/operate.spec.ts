// Pause, resume, stop, restart and delete from the console change what the REST API reports; a
// config edit shows its diff before it is applied.
import { test, expect } from "@playwright/test";
import { connectorState, rest, shot, watchErrors } from "./helpers";

test("pause, resume, stop, restart and delete from the connector page", async ({ page, request }) => {
  // The canvas's refused save (400) is expected.
  const errors = watchErrors(page, [/status of 400 \(Bad Request\)/]);
  await page.goto("/ui/#/overview");
  const row = page.locator('tr[data-connector="demo"]');
  await expect(row.locator(".badge").first()).toHaveText("RUNNING");
  // Records flow: the overview's rate of the demo connector becomes non-zero.
  await expect(row.locator("td.num").nth(1)).not.toHaveText(/^(—|0\.0\/s)$/, { timeout: 20_000 });
  await row.getByRole("link", { name: "demo" }).click();
  await expect(page.getByRole("heading", { name: "demo" })).toBeVisible();
  const actions = page.getByRole("toolbar", { name: "Connector actions" });

  // The charts of the last minutes (the worker samples every 5 s): the demo's rate (20/s) shows.
  const charts = page.getByTestId("charts");
  await expect.poll(async () => Number(await charts.getAttribute("data-points")), { timeout: 30_000 }).toBeGreaterThanOrEqual(2);
  const throughput = charts.getByRole("img", { name: /^Records per second/ });
  await expect(throughput).toBeVisible();
  await expect(throughput.locator("polyline")).toHaveCount(2);
  const label = (await throughput.getAttribute("aria-label")) || "";
  const now = Number(/out now ([\d.]+)\/s/.exec(label)?.[1]);
  expect(now, label).toBeGreaterThan(10);
  expect(now, label).toBeLessThan(30);
  await shot(page, "operate-charts");
  // The task's connection (here the runtime's inference: its polls pass).
  await expect(page.locator('tr[data-task="0"] [data-connection]')).toHaveText("connected");

  await actions.getByRole("button", { name: "Pause" }).click();
  await expect.poll(() => connectorState(request, "demo")).toBe("PAUSED");
  await expect(page.locator("h1 + .badge")).toHaveText("PAUSED");
  await shot(page, "operate-paused");

  await actions.getByRole("button", { name: "Resume" }).click();
  await expect.poll(() => connectorState(request, "demo")).toBe("RUNNING");

  await actions.getByRole("button", { name: "Stop" }).click();
  await expect.poll(() => connectorState(request, "demo"), { timeout: 30_000 }).toBe("STOPPED");
  await expect(page.locator("h1 + .badge")).toHaveText("STOPPED");
  // Offsets of a stopped connector: shown, and reset is offered.
  await page.getByRole("button", { name: "Show offsets" }).click();
  await expect(page.getByLabel("Offsets")).toBeVisible();
  await expect(page.getByRole("button", { name: "Reset offsets" })).toBeEnabled();

  await actions.getByRole("button", { name: "Resume" }).click();
  await expect.poll(() => connectorState(request, "demo"), { timeout: 30_000 }).toBe("RUNNING");
  await actions.getByRole("button", { name: "Restart", exact: true }).click();
  await expect.poll(() => connectorState(request, "demo"), { timeout: 30_000 }).toBe("RUNNING");

  // A plain connector opens on the canvas too: a direct task is source + sink. Saving writes its
  // config; the server's refusal lands on the field.
  await page.getByRole("link", { name: "Open on the canvas" }).click();
  await expect(page.getByRole("heading", { name: "Connector demo" })).toBeVisible();
  await expect(page.locator(".react-flow__node")).toHaveCount(2);
  await expect(page.locator(".react-flow__edge")).toHaveCount(1);
  await expect(page.getByRole("button", { name: "Deploy" })).toHaveCount(0);
  await page.locator(".react-flow__node", { hasText: "DatagenSource" }).click();
  await page.locator("#f-rate").fill("often");
  await page.getByRole("button", { name: "Save connector" }).click();
  await expect(page.locator('[data-field="rate"] .field-error')).toContainText("not a number");
  expect((await rest(request, "GET", "/connectors/demo/config")).json.rate).toBe("20");
  await page.locator(".react-flow__node", { hasText: "FileStreamSink" }).click();
  await expect(page.locator("#f-file")).toHaveValue(/demo\.jsonl$/);
  await page.locator(".react-flow__node", { hasText: "DatagenSource" }).click();
  await page.locator("#f-rate").fill("20");
  await page.locator("#f-topic").fill("demo2");
  await page.getByRole("button", { name: "Save connector" }).click();
  await expect(page.getByRole("status")).toContainText("Connector demo saved");
  const saved = (await rest(request, "GET", "/connectors/demo/config")).json;
  expect(saved.topic).toBe("demo2");
  expect(saved["sink.connector.class"]).toBe("FileStreamSink");
  expect(saved["sink.file"]).toMatch(/demo\.jsonl$/);
  await expect.poll(() => connectorState(request, "demo"), { timeout: 30_000 }).toBe("RUNNING");
  await page.goBack();
  await expect(page.getByRole("heading", { name: "Tasks" })).toBeVisible();

  // Edit the config: the diff shows the one changed line, then it is applied.
  await page.getByRole("button", { name: "Edit" }).click();
  const editor = page.getByLabel(/Configuration \(JSON object/);
  const text = await editor.inputValue();
  await editor.fill(text.replace('"rate": "20"', '"rate": "7"'));
  await page.getByRole("button", { name: "Review changes" }).click();
  const diff = page.getByLabel("Changes");
  await expect(diff.locator(".del")).toHaveText(['-   "rate": "20",']);
  await expect(diff.locator(".add")).toHaveText(['+   "rate": "7",']);
  await shot(page, "operate-diff");
  await page.getByRole("button", { name: "Apply" }).click();
  await expect.poll(async () => (await rest(request, "GET", "/connectors/demo/config")).json.rate).toBe("7");

  // Delete asks first; Cancel keeps it.
  await actions.getByRole("button", { name: "Delete" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
  expect((await rest(request, "GET", "/connectors/demo")).status).toBe(200);
  await actions.getByRole("button", { name: "Delete" }).click();
  await shot(page, "operate-delete-confirm");
  await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
  await expect(page.getByRole("heading", { name: "Overview" })).toBeVisible();
  await expect.poll(async () => (await rest(request, "GET", "/connectors/demo")).status).toBe(404);
  await expect(page.locator('tr[data-connector="demo"]')).toHaveCount(0);

  // Log levels: a change in the page is the worker's level.
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Log levels" }).click();
  await page.getByLabel("Level of rest").selectOption("DEBUG");
  await expect.poll(async () => (await rest(request, "GET", "/admin/loggers/rest")).json.level).toBe("DEBUG");
  await expect(page.locator('tr[data-logger="rest"] td').nth(2)).not.toHaveText("—");
  await page.getByLabel("Level of rest").selectOption("INFO");
  await expect.poll(async () => (await rest(request, "GET", "/admin/loggers/rest")).json.level).toBe("INFO");
  errors.check();
});
