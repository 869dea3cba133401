// The REST client of the console: every call goes through the worker's public REST API (the same
// routes curl and Kafka Connect clients use), with the operator's credentials when authentication
// is on. Credentials live in sessionStorage only: closing the tab forgets them.

export class ApiError extends Error {
  constructor(
    public status: number,
    message: string,
  ) {
    super(message);
  }
}

const AUTH_KEY = "ferry.console.authorization";

export function authorization(): string | null {
  return sessionStorage.getItem(AUTH_KEY);
}

export function setBasicAuth(user: string, password: string): void {
  // btoa takes Latin-1 only: encode UTF-8 first.
  const bytes = new TextEncoder().encode(`${user}:${password}`);
  let bin = "";
  bytes.forEach((b) => (bin += String.fromCharCode(b)));
  sessionStorage.setItem(AUTH_KEY, `Basic ${btoa(bin)}`);
}

export function setBearer(token: string): void {
  sessionStorage.setItem(AUTH_KEY, `Bearer ${token}`);
}

export function logout(): void {
  sessionStorage.removeItem(AUTH_KEY);
}

const listeners = new Set<() => void>();
// Called when the server answers 401: the app shows its login form.
export function onUnauthorized(f: () => void): () => void {
  listeners.add(f);
  return () => listeners.delete(f);
}

// The headers of every request the console sends. X-Requested-With: the worker then sends no
// Basic challenge with a 401, so the browser shows no login prompt of its own; the console shows
// its login form.
export function requestHeaders(accept = "application/json"): Record<string, string> {
  const headers: Record<string, string> = { Accept: accept, "X-Requested-With": "XMLHttpRequest" };
  const auth = authorization();
  if (auth) headers.Authorization = auth;
  return headers;
}

export async function request<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const headers = requestHeaders();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  const text = await res.text();
  if (res.status === 401) listeners.forEach((f) => f());
  if (!res.ok) {
    let message = text || res.statusText;
    try {
      const j = JSON.parse(text);
      if (j && typeof j.message === "string") message = j.message;
    } catch {
      /* not JSON: the text itself */
    }
    throw new ApiError(res.status, message);
  }
  if (!text) return undefined as T;
  const type = res.headers.get("Content-Type") || "";
  return (type.includes("json") ? JSON.parse(text) : text) as T;
}

export const get = <T = unknown>(path: string) => request<T>("GET", path);
export const enc = encodeURIComponent;

// --- shapes of the REST answers the console reads (src/rest/README.md)

export type State = "RUNNING" | "PAUSED" | "STOPPED" | "FAILED" | "UNASSIGNED" | "RESTARTING" | string;

export interface TaskStatus {
  id: number;
  state: State;
  worker_id: string;
  trace?: string;
  progress?: { phase: string; done: number; estimated?: number; percent?: number; unit: string; rate_per_second: number };
  // The task's connection to its outside system (the task stays RUNNING while it reconnects).
  connection?: { state: "connected" | "reconnecting" | "degraded" | string; since: string; since_ms: number; reconnects: number; error?: string };
  metrics?: { records_in: number; records_out: number; errors: number; commit_lag_records: number };
}

export interface ConnectorStatus {
  name: string;
  connector: { state: State; worker_id: string; trace?: string };
  tasks: TaskStatus[];
  type: string;
  ferry_type?: string;
}

export interface ConnectorInfo {
  name: string;
  config: Record<string, string>;
  tasks: { connector: string; task: number }[];
  type: string;
  ferry_type?: string;
}

export type Expanded = Record<string, { status?: ConnectorStatus; info?: ConnectorInfo }>;

export interface Plugin {
  class: string;
  type: "source" | "sink" | "transformation" | "predicate" | "converter" | "header_converter" | string;
  version: string;
}

export interface ConfigKey {
  name: string;
  type: string;
  required: boolean;
  default_value: string | null;
  importance: string;
  documentation: string;
  group: string | null;
  display_name: string;
  order: number;
}

export interface Whoami {
  authentication: boolean;
  user: string | null;
  role: "viewer" | "operator" | "admin";
  via?: string;
}

export interface Pipeline {
  name: string;
  mode?: "direct" | "backbone";
  source: Record<string, string>;
  transforms?: Record<string, string>[];
  sinks?: Record<string, string>[];
  sink?: Record<string, string>;
  topic?: string;
  connectors?: { name: string; state: State; tasks: number }[];
}

// "  source.rate: Invalid value ..." lines of a refused pipeline -> field -> messages.
export function pipelineErrors(message: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const line of message.split("\n")) {
    const m = /^\s+((?:source|sinks\[\d+\]|transforms\.[^.\s:]+|topic|name|mode)(?:\.[^\s:]+)?):\s(.*)$/.exec(line);
    if (!m) continue;
    (out[m[1]] ||= []).push(m[2]);
  }
  return out;
}

export interface Member {
  id: string;
  url?: string;
  units?: number;
  capacity?: number;
  last_heartbeat_log_ms?: number;
}

export interface Workers {
  mode: string;
  health: string;
  answeredBy: string;
  lease?: boolean;
  members: Member[];
}

// The workers: this one (standalone), or the cluster's members (GET /cluster).
export async function loadWorkers(): Promise<Workers | null> {
  try {
    const root = await get<{ worker_id: string; mode?: string }>("/");
    const health = await get<{ status: string }>("/health").then((h) => h.status, (e) => `unhealthy: ${(e as Error).message}`);
    if (root.mode !== "distributed") return { mode: "standalone", health, answeredBy: root.worker_id, members: [{ id: root.worker_id }] };
    const c = await get<{ worker: string; lease: boolean; workers: Member[] }>("/cluster");
    return { mode: "distributed", health, answeredBy: c.worker, lease: c.lease, members: c.workers };
  } catch {
    return null;
  }
}
