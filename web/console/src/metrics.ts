// Per-connector figures from the worker's Prometheus text (GET /metrics): totals summed over a
// connector's tasks, and rates from two successive scrapes.

export interface Totals {
  recordsIn: number;
  recordsOut: number;
  errors: number;
  lag: number; // records read or polled and not yet committed (ferry_task_commit_lag_records)
}

export interface Rates extends Totals {
  inPerSec: number;
  outPerSec: number;
}

const SERIES: Record<string, keyof Totals> = {
  ferry_task_records_in_total: "recordsIn",
  ferry_task_records_out_total: "recordsOut",
  ferry_task_errors_total: "errors",
  ferry_task_commit_lag_records: "lag",
};

export function parseTotals(text: string): Map<string, Totals> {
  const out = new Map<string, Totals>();
  for (const line of text.split("\n")) {
    if (!line.startsWith("ferry_task_")) continue;
    const brace = line.indexOf("{");
    if (brace < 0) continue;
    const key = SERIES[line.slice(0, brace)];
    if (!key) continue;
    const m = /connector="((?:[^"\\]|\\.)*)"/.exec(line);
    if (!m) continue;
    const connector = m[1].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (!Number.isFinite(value)) continue;
    let t = out.get(connector);
    if (!t) out.set(connector, (t = { recordsIn: 0, recordsOut: 0, errors: 0, lag: 0 }));
    t[key] += value;
  }
  return out;
}

export function rates(prev: Map<string, Totals> | null, cur: Map<string, Totals>, seconds: number): Map<string, Rates> {
  const out = new Map<string, Rates>();
  for (const [name, t] of cur) {
    const p = prev?.get(name);
    const per = (a: number, b: number | undefined) => (p && seconds > 0 && a >= (b ?? 0) ? (a - (b ?? 0)) / seconds : 0);
    out.set(name, { ...t, inPerSec: per(t.recordsIn, p?.recordsIn), outPerSec: per(t.recordsOut, p?.recordsOut) });
  }
  return out;
}

export function formatRate(x: number): string {
  if (x >= 1e6) return `${(x / 1e6).toFixed(1)}M/s`;
  if (x >= 1e3) return `${(x / 1e3).toFixed(1)}k/s`;
  return `${x < 10 ? x.toFixed(1) : Math.round(x)}/s`;
}
