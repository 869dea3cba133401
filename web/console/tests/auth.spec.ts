// With authentication on: the console asks for credentials; a viewer sees no write controls and
// gets 403 when it tries anyway; an operator may pause but not delete; an admin may do all.
import { test, expect, type Page } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import { base, connectorState, rest, shot, watchErrors } from "./helpers";

const users: Record<string, [string, string]> = JSON.parse(process.env.FERRY_WEB_USERS || "{}");
const basic = (name: string) => "Basic " + Buffer.from(`${name}:${users[name][1]}`).toString("base64");

async function login(page: Page, name: string, password = users[name][1]) {
  await page.goto("/ui/");
  await expect(page.getByRole("heading", { name: "ferry console" })).toBeVisible();
  await page.getByLabel("User").fill(name);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Log in" }).click();
}

test("a wrong password is refused and nothing is shown", async ({ page, request }) => {
  const errors = watchErrors(page, [/status of 401/]);
  // The API itself refuses without credentials; the public console pages do not need them.
  expect((await rest(request, "GET", "/connectors")).status).toBe(401);
  expect((await request.get(base() + "/ui/")).status()).toBe(200);
  await page.goto("/ui/");
  await expect(page.getByRole("heading", { name: "ferry console" })).toBeVisible();
  const axe = await new AxeBuilder({ page }).analyze();
  expect(axe.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id)).toEqual([]);
  await login(page, "vera", "not-her-password");
  await expect(page.getByRole("alert")).toContainText("Wrong user, password or token");
  await expect(page.getByRole("heading", { name: "Overview" })).toHaveCount(0);
  await shot(page, "auth-refused");
  errors.check();
});

// The console's first question (GET /whoami) is answered 401 before the login: expected.
test("a viewer sees no write controls and gets 403 when trying", async ({ page, request }) => {
  const errors = watchErrors(page, [/status of 401/, /status of 403/]);
  await login(page, "vera");
  await expect(page.getByTestId("who")).toHaveText("vera (viewer)");
  await expect(page.locator('tr[data-connector="demo"] .badge').first()).toHaveText("RUNNING");
  await page.locator('tr[data-connector="demo"]').getByRole("link", { name: "demo" }).click();
  await expect(page.getByRole("heading", { name: "Tasks" })).toBeVisible();
  await expect(page.getByRole("toolbar", { name: "Connector actions" })).toHaveCount(0);
  await expect(page.getByRole("button", { name: /Pause|Resume|Stop|Restart|Delete|Edit/ })).toHaveCount(0);
  await shot(page, "auth-viewer");
  await page.goto("/ui/#/builder");
  await expect(page.getByRole("button", { name: "Deploy" })).toHaveCount(0);
  // Trying anyway, with the viewer's own credentials, from the page: 403, nothing changed.
  const status = await page.evaluate(async () => {
    const auth = sessionStorage.getItem("ferry.console.authorization")!;
    const r = await fetch("/connectors/demo/pause", { method: "PUT", headers: { Authorization: auth } });
    return r.status;
  });
  expect(status).toBe(403);
  expect(await connectorState(request, "demo", basic("ada"))).toBe("RUNNING");
  errors.check();
});

test("an operator pauses and resumes but cannot delete; an admin can", async ({ page, request }) => {
  const errors = watchErrors(page, [/status of 401/]);
  await login(page, "otto");
  await expect(page.getByTestId("who")).toHaveText("otto (operator)");
  await page.goto("/ui/#/connectors/demo");
  const actions = page.getByRole("toolbar", { name: "Connector actions" });
  await actions.getByRole("button", { name: "Pause" }).click();
  await expect.poll(() => connectorState(request, "demo", basic("ada"))).toBe("PAUSED");
  await actions.getByRole("button", { name: "Resume" }).click();
  await expect.poll(() => connectorState(request, "demo", basic("ada"))).toBe("RUNNING");
  await expect(actions.getByRole("button", { name: "Delete" })).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Edit" })).toHaveCount(0);
  await shot(page, "auth-operator");
  await page.getByRole("button", { name: "Log out" }).click();
  await login(page, "ada");
  await expect(page.getByTestId("who")).toHaveText("ada (admin)");
  await page.goto("/ui/#/connectors/demo");
  await expect(page.getByRole("toolbar", { name: "Connector actions" }).getByRole("button", { name: "Delete" })).toBeVisible();
  errors.check();
});
