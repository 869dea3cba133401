// Per-connector figures from the status every worker answers (GET /connectors?expand=status): each
// running task's counters (`tasks[].metrics`; in a cluster also of the tasks other workers run, as
// their heartbeats carry them), summed per connector, and rates from the counts over the last
// polls.
import type { Expanded } from "./api";

export interface Totals {
  recordsIn: number;
  recordsOut: number;
  errors: number;
  lag: number; // records taken in and not yet committed (commit_lag_records)
}

export interface Rates extends Totals {
  inPerSec: number;
  outPerSec: number;
}

// Connectors without a task whose counters are known are left out (shown as "—").
export function totalsFromStatus(connectors: Expanded): Map<string, Totals> {
  const out = new Map<string, Totals>();
  for (const [name, c] of Object.entries(connectors)) {
    for (const t of c.status?.tasks ?? []) {
      const m = t.metrics;
      if (!m) continue;
      let sum = out.get(name);
      if (!sum) out.set(name, (sum = { recordsIn: 0, recordsOut: 0, errors: 0, lag: 0 }));
      sum.recordsIn += m.records_in;
      sum.recordsOut += m.records_out;
      sum.errors += m.errors;
      sum.lag += m.commit_lag_records;
    }
  }
  return out;
}

export interface Sample {
  at: number; // ms
  totals: Map<string, Totals>;
}

// Rates over the window from the oldest of `past` (oldest first) to `cur`: counters of other
// workers' tasks are as fresh as their last heartbeat, so a longer window than one poll evens out
// when each arrived. A count that went down (a task restarted) gives no rate for that window.
export function rates(past: Sample[], cur: Sample): Map<string, Rates> {
  const out = new Map<string, Rates>();
  const first = past[0];
  const seconds = first ? (cur.at - first.at) / 1000 : 0;
  for (const [name, t] of cur.totals) {
    const p = first?.totals.get(name);
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
