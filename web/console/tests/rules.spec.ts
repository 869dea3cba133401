// The rule editor and tester: a kept and a dropped record with each step; a syntax error shown at
// its line and column in the editor; sample records taken live from a connector through a tap,
// and the newest records of a backbone topic.
import { test, expect } from "@playwright/test";
import { rest, shot, watchErrors } from "./helpers";

test("the tester shows a kept and a dropped record, and errors at their line and column", async ({ page }) => {
  const errors = watchErrors(page, [/status of 400/]);
  await page.goto("/ui/#/rules");
  await expect(page.getByTestId("rule-editor").locator(".cm-content")).toContainText("SELECT payload.temp");
  // Highlighted: keywords and strings carry their own styles.
  await expect(page.getByTestId("rule-editor").locator(".cm-line span").first()).toBeVisible();
  await page.getByRole("button", { name: "Test the rule" }).click();
  const rows = page.getByRole("table", { name: "Results" }).locator("tbody tr");
  await expect(rows).toHaveCount(2);
  await expect(rows.nth(0)).toHaveAttribute("data-result", "kept");
  await expect(rows.nth(0)).toContainText('"t": 31.5');
  await expect(rows.nth(0)).toContainText("rule (Rule): ok");
  await expect(rows.nth(1)).toHaveAttribute("data-result", "dropped");
  await expect(rows.nth(1)).toContainText("rule (Rule): dropped");
  await shot(page, "rules-kept-dropped");

  // A syntax error on line 2: the server's message, and a mark in the editor at that place.
  const editor = page.getByTestId("rule-editor").locator(".cm-content");
  await editor.click();
  await page.keyboard.press("Control+a");
  await page.keyboard.type('SELECT payload.temp\nFROM "sensors/#" WHER payload.temp > 1');
  await page.getByRole("button", { name: "Test the rule" }).click();
  await expect(page.getByTestId("rule-error")).toContainText("line 2, column 18");
  const mark = page.getByTestId("rule-editor").locator(".cm-lintRange-error");
  await expect(mark).toHaveCount(1);
  await expect(mark).toHaveText("WHER");
  await shot(page, "rules-error-at-position");
  errors.check();
});

test("sample records are taken live from a connector", async ({ page }) => {
  const errors = watchErrors(page);
  await page.goto("/ui/#/rules");
  await page.getByLabel("Connector to take live records from").selectOption("demo");
  await page.getByRole("button", { name: "Take 5 records" }).click();
  await expect(page.getByRole("status")).toContainText("live records from demo", { timeout: 15_000 });
  const samples = JSON.parse(await page.getByLabel(/JSON array of/).inputValue());
  expect(samples.length).toBeGreaterThan(0);
  expect(samples[0].topic).toBe("demo");
  expect(typeof samples[0].value.seq).toBe("number");
  // Run a rule on them: every record is kept with its seq.
  const editor = page.getByTestId("rule-editor").locator(".cm-content");
  await editor.click();
  await page.keyboard.press("Control+a");
  await page.keyboard.type('SELECT payload.seq AS s FROM "#"');
  await page.getByRole("button", { name: "Test the rule" }).click();
  const rows = page.getByRole("table", { name: "Results" }).locator("tbody tr");
  await expect(rows).toHaveCount(samples.length);
  await expect(rows.first()).toHaveAttribute("data-result", "kept");
  await expect(rows.first()).toContainText(`"s": ${samples[0].value.seq}`);
  await shot(page, "rules-live");
  errors.check();
});

test("sample records are the newest of a backbone topic", async ({ page, request }) => {
  const errors = watchErrors(page);
  await page.goto("/ui/#/rules");
  await page.getByLabel("Topic to take the newest records from").selectOption("sensor-feed");
  await page.getByRole("button", { name: "Take 5 from the topic" }).click();
  await expect(page.getByRole("status")).toContainText("5 newest records of topic sensor-feed", { timeout: 15_000 });
  const samples = JSON.parse(await page.getByLabel(/JSON array of/).inputValue());
  expect(samples.length).toBe(5);
  const seqs = samples.map((s: { value: { seq: number } }) => s.value.seq);
  // Five consecutive records, oldest first, all there when the page asked (the feed goes on).
  expect(seqs).toEqual([0, 1, 2, 3, 4].map((i) => seqs[0] + i));
  expect(samples[0].topic).toBe("sensor-feed");
  const now = await rest(request, "GET", "/topics/sensor-feed/records?limit=1");
  expect(now.json.records[0].value && JSON.parse(now.json.records[0].value).seq).toBeGreaterThanOrEqual(seqs[4]);
  // A rule that keeps the two newest.
  const editor = page.getByTestId("rule-editor").locator(".cm-content");
  await editor.click();
  await page.keyboard.press("Control+a");
  await page.keyboard.type(`SELECT payload.seq AS s FROM "#" WHERE payload.seq > ${seqs[2]}`);
  await page.getByRole("button", { name: "Test the rule" }).click();
  const rows = page.getByRole("table", { name: "Results" }).locator("tbody tr");
  await expect(rows).toHaveCount(5);
  await expect(rows.and(page.locator('[data-result="kept"]'))).toHaveCount(2);
  await expect(rows.and(page.locator('[data-result="dropped"]'))).toHaveCount(3);
  await shot(page, "rules-from-topic");
  errors.check();
});
