// A three-worker cluster (Kafka backbone) on the cluster page: one worker is killed (kill -9)
// while the page is open; the page shows it leave and its units move to the other two.
import { test, expect } from "@playwright/test";
import { rest, shot, watchErrors } from "./helpers";

test("a worker killed with kill -9 leaves the cluster page and its units move", async ({ page, request }) => {
  const errors = watchErrors(page);
  const victim = process.env.FERRY_WEB_VICTIM || "w3";
  const pid = Number(process.env.FERRY_WEB_VICTIM_PID);
  expect(pid, "FERRY_WEB_VICTIM_PID").toBeGreaterThan(0);

  // Cluster-wide figures, from w1's console: the 6 tasks (2 per worker) make 6 x 5 = 30 records/s;
  // w1's own tasks make 10/s. The overview's rate, the connector's task counters and its chart
  // count every worker's tasks.
  await page.goto("/ui/#/overview");
  const row = page.locator('tr[data-connector="spread"]');
  const cells = row.locator("td.num");
  const rate = async () => Number((/([\d.]+)\/s/.exec((await cells.nth(1).textContent()) || "") || [])[1] ?? 0);
  await expect.poll(rate, { timeout: 30_000, message: "the overview's out rate of spread (cluster-wide 30/s)" }).toBeGreaterThan(20);
  expect(await rate()).toBeLessThan(40);
  await shot(page, "cluster-overview-rates");
  await row.getByRole("link", { name: "spread" }).click();
  const tasks = page.getByRole("table", { name: "Tasks" }).locator("tbody tr");
  await expect(tasks).toHaveCount(6);
  // Every task's records out, the other workers' too (columns: task, state, worker, in, out, ...).
  await expect.poll(async () => {
    const outs = await tasks.evaluateAll((rows) => rows.map((r) => Number(r.querySelectorAll("td")[4]?.textContent)));
    return outs.filter((n) => n > 0).length;
  }, { timeout: 15_000 }).toBe(6);
  // The tap samples w1's tasks; the page points to w2's and w3's consoles for theirs.
  const elsewhere = page.getByRole("list", { name: "Tasks on other workers" });
  await expect(elsewhere.locator("li")).toHaveCount(2);
  const link = elsewhere.locator(`li[data-elsewhere="${victim}"] a`);
  await expect(link).toHaveAttribute("href", /^http:\/\/127\.0\.0\.1:\d+\/ui\/#\/connectors\/spread$/);
  const charts = page.getByTestId("charts");
  await expect.poll(async () => {
    const label = (await charts.getByRole("img", { name: /^Records per second/ }).getAttribute("aria-label")) || "";
    return Number(/out now ([\d.]+)\/s/.exec(label)?.[1] ?? 0);
  }, { timeout: 30_000, message: "the chart's out rate of spread (cluster-wide 30/s)" }).toBeGreaterThan(20);
  await shot(page, "cluster-connector-figures");

  await page.goto("/ui/#/cluster");
  const members = page.getByRole("table", { name: "Members" }).locator("tbody tr");
  await expect(members).toHaveCount(3);
  await expect(page.locator(`tr[data-member="${victim}"]`)).toBeVisible();
  const units = page.getByRole("table", { name: "Units" }).locator("tbody tr");
  const onVictim = page.locator(`tr[data-unit][data-owner="${victim}"]`);
  await expect.poll(() => onVictim.count()).toBeGreaterThan(0);
  const moved = await onVictim.evaluateAll((rows) => rows.map((r) => r.getAttribute("data-unit")));
  await shot(page, "cluster-three-workers");

  process.kill(pid, "SIGKILL");
  const t0 = Date.now();
  // The page (refreshed every second) shows two members, and no unit left on the dead worker.
  await expect(members).toHaveCount(2, { timeout: 30_000 });
  await expect(page.locator(`tr[data-member="${victim}"]`)).toHaveCount(0);
  await expect(onVictim).toHaveCount(0, { timeout: 30_000 });
  for (const unit of moved) {
    const row = page.locator(`tr[data-unit="${unit}"]`);
    await expect(row).toHaveCount(1);
    await expect(row).not.toHaveAttribute("data-owner", victim);
  }
  await expect.poll(async () => (await units.locator(".badge", { hasText: "RUNNING" }).count()), { timeout: 30_000 })
    .toBe(await units.count());
  console.log(`the cluster page showed ${victim} gone and its ${moved.length} units moved ${Date.now() - t0} ms after kill -9`);
  await shot(page, "cluster-after-kill");
  // The far end agrees: the REST API's status has every task RUNNING on the two live workers.
  const st = await rest(request, "GET", "/connectors/spread/status");
  expect(st.json.tasks.every((t: { state: string; worker_id: string }) => t.state === "RUNNING" && !t.worker_id.includes(victim))).toBe(true);
  // The overview lists the two live members.
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Overview" }).click();
  await expect(page.getByRole("heading", { name: "Workers (2, distributed)" })).toBeVisible();
  await expect(page.locator(`[data-worker="${victim}"]`)).toHaveCount(0);
  await shot(page, "cluster-overview");
  errors.check();
});
