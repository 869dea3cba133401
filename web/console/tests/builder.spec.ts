// Build datagen -> Rule -> file sink by drag and drop on the canvas, deploy it, see it RUNNING and
// the rule's records in the file; an invalid field shows the server's error on that field.
import { test, expect } from "@playwright/test";
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { connectorState, rest, shot, watchErrors, workDir } from "./helpers";

test("a pipeline built by drag and drop runs and its rule keeps the even records", async ({ page, request }) => {
  // The browser logs the refused first deploy (400): that one is expected.
  const errors = watchErrors(page, [/status of 400 \(Bad Request\)/]);
  const out = join(workDir(), "even.jsonl");
  await page.goto("/");
  await expect(page).toHaveURL(/\/ui\/$/);
  await page.getByRole("link", { name: "Pipeline builder" }).click();
  const canvas = page.getByTestId("canvas");
  await page.locator('[data-plugin="DatagenSource"]').dragTo(canvas, { targetPosition: { x: 100, y: 120 } });
  await page.locator('[data-plugin="io.ferry.transforms.Rule"]').dragTo(canvas, { targetPosition: { x: 330, y: 120 } });
  await page.locator('[data-plugin="org.apache.kafka.connect.file.FileStreamSinkConnector"]').dragTo(canvas, { targetPosition: { x: 560, y: 120 } });
  await expect(page.locator(".react-flow__node")).toHaveCount(3);
  // Wired source -> rule -> sink: two edges, and nothing left for the canvas to ask.
  await expect(page.locator(".react-flow__edge")).toHaveCount(2);
  await expect(page.getByRole("list", { name: "What the canvas still needs" })).toHaveCount(0);

  await page.getByLabel("Name").first().fill("ui-even");
  await page.locator(".react-flow__node", { hasText: "DatagenSource" }).click();
  await page.locator("#f-topic").fill("ui-even");
  await page.locator("#f-format").fill("json");
  // A value the server refuses: its message must appear on this field.
  await page.locator("#f-rate").fill("fast");
  await page.locator(".react-flow__node", { hasText: "Rule" }).click();
  await page.locator("#f-sql").fill('SELECT payload.seq AS seq FROM "#" WHERE payload.seq % 2 = 0');
  await page.locator("#f-unmatched").fill("drop");
  await page.locator(".react-flow__node", { hasText: "FileStreamSinkConnector" }).click();
  await page.locator("#f-file").fill(out);
  await page.getByRole("button", { name: "Deploy" }).click();

  // The server's refusal lands on the source's rate field, and nothing was created.
  const rate = page.locator('[data-field="rate"]');
  await expect(rate.locator(".field-error")).toContainText("rate");
  await expect(page.locator("#f-rate")).toHaveAttribute("aria-invalid", "true");
  await expect(page.locator(".react-flow__node.selected, .react-flow__node:has(.pnode.has-errors)")).not.toHaveCount(0);
  await shot(page, "builder-field-error");
  expect((await rest(request, "GET", "/pipelines/ui-even")).status).toBe(404);

  await page.locator("#f-rate").fill("50");
  await page.getByRole("button", { name: "Deploy" }).click();
  await expect(page.getByRole("status")).toContainText("saved and deployed");
  await shot(page, "builder-deployed");

  // The far end: the REST API and the file.
  await expect.poll(() => connectorState(request, "ui-even"), { timeout: 30_000 }).toBe("RUNNING");
  const p = await rest(request, "GET", "/pipelines/ui-even");
  expect(p.status).toBe(200);
  expect(p.json.transforms[0].sql).toContain("% 2 = 0");
  await expect
    .poll(() => (existsSync(out) ? readFileSync(out, "utf8").split("\n").filter(Boolean).length : 0), { timeout: 30_000 })
    .toBeGreaterThanOrEqual(5);
  const seqs = readFileSync(out, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l).seq as number);
  expect(seqs.every((s) => s % 2 === 0), `only even seqs in ${out}: ${seqs.slice(0, 20)}`).toBe(true);

  // The overview shows it RUNNING, and it opens again on the canvas.
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Overview" }).click();
  const row = page.locator('tr[data-connector="ui-even"]');
  await expect(row.locator(".badge").first()).toHaveText("RUNNING");
  await expect(page.locator('[data-pipeline="ui-even"] .badge')).toHaveText("RUNNING");
  await expect(page.getByRole("heading", { name: "Worker (standalone)" })).toBeVisible();
  await expect(page.locator(".card.worker")).toHaveCount(1);
  await shot(page, "overview-running");

  // The tap on the connector's page shows the rule's output as it flows; leaving the page closes it.
  await row.getByRole("link", { name: "ui-even" }).first().click();
  const opened = page.waitForResponse((r) => r.url().endsWith("/connectors/ui-even/tap") && r.request().method() === "POST");
  await page.getByRole("button", { name: "Watch records" }).click();
  const tapId = (await (await opened).json()).id as string;
  const tapped = page.getByRole("table", { name: "Live records" }).locator("tr[data-tap-record]");
  await expect(tapped.first()).toBeVisible({ timeout: 15_000 });
  await expect.poll(() => tapped.count(), { timeout: 15_000 }).toBeGreaterThanOrEqual(3);
  for (const text of await tapped.locator(".tap-value code").allTextContents())
    expect(JSON.parse(text).seq % 2, `tapped value ${text}`).toBe(0);
  await shot(page, "connector-tap");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Overview" }).click();
  await expect.poll(async () => (await rest(request, "GET", `/taps/${tapId}`)).status).toBe(404);
  // The row links the connector and, below it, its pipeline: the pipeline opens on the canvas.
  await row.getByRole("link", { name: "ui-even" }).last().click();
  await expect(page.getByRole("heading", { name: "Pipeline ui-even" })).toBeVisible();
  await expect(page.locator(".react-flow__node")).toHaveCount(3);
  await expect(page.locator(".react-flow__edge")).toHaveCount(2);
  errors.check();
});

test("every template opens on the canvas whole and the worker accepts it", async ({ page, request }) => {
  const errors = watchErrors(page);
  const titles = ["MQTT → RocketMQ bridge with rules", "RocketMQ → MQTT", "Kafka → Kafka replication", "File → backbone → file"];
  for (const [i, title] of titles.entries()) {
    await page.goto("/ui/#/builder");
    await page.getByLabel("Start from a template").selectOption({ label: title });
    await expect(page.locator(".react-flow__node")).toHaveCount(title.startsWith("Kafka") ? 2 : 3);
    await expect(page.getByRole("list", { name: "What the canvas still needs" })).toHaveCount(0);
    if (title.startsWith("File")) {
      await expect(page.getByLabel("through the backbone")).toBeChecked();
      await page.locator(".react-flow__node", { hasText: "FileStreamSource" }).click();
      await page.locator("#f-file").fill(join(workDir(), `tpl-in-${i}.txt`));
      await page.locator(".react-flow__node", { hasText: "FileStreamSink" }).click();
      await page.locator("#f-file").fill(join(workDir(), `tpl-out-${i}.txt`));
    }
    await page.getByLabel("Name").first().fill(`tpl-${i}`);
    await page.getByRole("button", { name: "Deploy" }).click();
    await expect(page.getByRole("status")).toContainText("saved and deployed");
    await shot(page, `builder-template-${i}`);
    expect((await rest(request, "DELETE", `/pipelines/tpl-${i}`)).status).toBe(204);
  }
  errors.check();
});
