// Shared by the console's browser tests: the worker's REST API as the tests check it (the far end
// of every click), independent of the console's own client code.
import { expect, type APIRequestContext, type Page } from "@playwright/test";

export const base = () => {
  const u = process.env.FERRY_URL;
  if (!u) throw new Error("FERRY_URL is not set: tests/web/test_console.py starts the worker and sets it");
  return u;
};
export const workDir = () => process.env.FERRY_WEB_DIR || "";

export async function rest(request: APIRequestContext, method: string, path: string, body?: unknown, auth?: string) {
  const headers: Record<string, string> = {};
  if (auth) headers.Authorization = auth;
  const res = await request.fetch(base() + path, { method, headers, data: body === undefined ? undefined : body });
  const text = await res.text();
  let json: unknown = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = text; }
  return { status: res.status(), json: json as any };
}

export async function connectorState(request: APIRequestContext, name: string, auth?: string) {
  const r = await rest(request, "GET", `/connectors/${encodeURIComponent(name)}/status`, undefined, auth);
  return r.status === 200 ? (r.json.connector.state as string) : `HTTP ${r.status}`;
}

// The page must not have logged errors (a failed request the test expects is listed in `allowed`).
export function watchErrors(page: Page, allowed: RegExp[] = []) {
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !allowed.some((a) => a.test(m.text()))) errors.push(`console: ${m.text()}`);
  });
  return {
    check: () => expect(errors, "errors in the browser").toEqual([]),
  };
}

export async function shot(page: Page, name: string) {
  const dir = process.env.FERRY_WEB_ARTIFACTS || "test-results";
  await page.screenshot({ path: `${dir}/${name}.png`, fullPage: true });
}
