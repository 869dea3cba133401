// A three-worker cluster (Kafka backbone) on the cluster page: one worker is killed (kill -9)
// while the page is open; the page shows it leave and its units move to the other two.
import { test, expect } from "@playwright/test";
import { rest, shot, watchErrors } from "./helpers";

test("a worker killed with kill -9 leaves the cluster page and its units move", async ({ page, request }) => {
  const errors = watchErrors(page);
  const victim = process.env.FERRY_WEB_VICTIM || "w3";
  const pid = Number(process.env.FERRY_WEB_VICTIM_PID);
  expect(pid, "FERRY_WEB_VICTIM_PID").toBeGreaterThan(0);
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
