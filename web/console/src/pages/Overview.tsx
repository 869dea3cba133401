import { useEffect, useMemo, useRef, useState } from "react";
import { get, loadWorkers, type Expanded, type ConnectorStatus, type Workers } from "../api";
import { usePoll } from "../hooks";
import { totalsFromStatus, rates, formatRate, type Rates, type Sample } from "../metrics";
import { href } from "../route";
import { Dialog, ErrorText, StateBadge } from "../components";

interface Snapshot {
  connectors: Expanded;
  rates: Map<string, Rates>;
  workers: Workers | null;
  at: number;
}

function taskSummary(s?: ConnectorStatus) {
  if (!s) return { running: 0, failed: 0, total: 0 };
  return {
    running: s.tasks.filter((t) => t.state === "RUNNING").length,
    failed: s.tasks.filter((t) => t.state === "FAILED").length,
    total: s.tasks.length,
  };
}

export function Overview() {
  const past = useRef<Sample[]>([]);
  const { data, error } = usePoll<Snapshot>(async () => {
    const [connectors, workers] = await Promise.all([get<Expanded>("/connectors?expand=status&expand=info"), loadWorkers()]);
    const cur: Sample = { at: Date.now(), totals: totalsFromStatus(connectors) };
    const r = rates(past.current, cur);
    // Rates over the last ~10 s (5 polls).
    past.current = [...past.current, cur].slice(-5);
    return { connectors, rates: r, workers, at: cur.at };
  }, 2000);
  const [filter, setFilter] = useState("");
  const [trace, setTrace] = useState<{ title: string; text: string } | null>(null);

  const rows = useMemo(() => {
    if (!data) return [];
    const f = filter.trim().toLowerCase();
    return Object.entries(data.connectors)
      .filter(([name, c]) => !f || name.toLowerCase().includes(f) || (c.info?.config["connector.class"] || "").toLowerCase().includes(f))
      .sort(([a], [b]) => a.localeCompare(b));
  }, [data, filter]);

  // Pipelines: their connectors carry pipeline=<name> (src/rest/README.md, Pipelines).
  const pipelines = useMemo(() => {
    const out = new Map<string, { connectors: string[]; states: string[] }>();
    if (!data) return out;
    for (const [name, c] of Object.entries(data.connectors)) {
      const p = c.info?.config["pipeline"];
      if (!p) continue;
      const e = out.get(p) ?? { connectors: [], states: [] };
      e.connectors.push(name);
      const failed = c.status?.tasks.some((t) => t.state === "FAILED");
      e.states.push(failed ? "FAILED" : c.status?.connector.state ?? "UNASSIGNED");
      out.set(p, e);
    }
    return out;
  }, [data]);

  // The first render with every connector: a performance mark the browser tests read (how long
  // from navigation until the overview shows the worker's connectors).
  useEffect(() => {
    if (data && performance.getEntriesByName("ferry:overview-rendered").length === 0) performance.mark("ferry:overview-rendered");
  }, [data]);

  const counts = useMemo(() => {
    const c = { total: 0, running: 0, failed: 0, paused: 0, stopped: 0 };
    if (!data) return c;
    for (const x of Object.values(data.connectors)) {
      c.total++;
      const st = x.status?.connector.state;
      const failedTask = x.status?.tasks.some((t) => t.state === "FAILED");
      if (st === "FAILED" || failedTask) c.failed++;
      else if (st === "RUNNING") c.running++;
      else if (st === "PAUSED") c.paused++;
      else if (st === "STOPPED") c.stopped++;
    }
    return c;
  }, [data]);

  return (
    <section aria-labelledby="overview-title">
      <div className="row">
        <h1 id="overview-title">Overview</h1>
        <span className="spacer" />
        <a className="button" href={href("builder")}>New pipeline</a>
      </div>
      <ErrorText error={error} />
      <div className="stats" role="list" aria-label="Connector counts">
        <div role="listitem" className="stat"><b data-testid="count-total">{counts.total}</b> connectors</div>
        <div role="listitem" className="stat ok"><b>{counts.running}</b> running</div>
        <div role="listitem" className="stat bad"><b data-testid="count-failed">{counts.failed}</b> failed</div>
        <div role="listitem" className="stat"><b>{counts.paused}</b> paused</div>
        <div role="listitem" className="stat"><b>{counts.stopped}</b> stopped</div>
      </div>
      {data?.workers && (
        <section aria-labelledby="workers-title" className="workers">
          <h2 id="workers-title">
            {data.workers.mode === "standalone" ? "Worker (standalone)" : `Workers (${data.workers.members.length}, distributed)`}
          </h2>
          <ul className="cards">
            {data.workers.members.map((m) => (
              <li key={m.id} className="card worker" data-worker={m.id}>
                <b>{m.id}</b>
                {m.id === data.workers!.answeredBy && <span className="muted small"> (this console's)</span>}
                <div className="small">
                  {m.id === data.workers!.answeredBy ? data.workers!.health : "member"}
                  {m.units !== undefined && ` · ${m.units} units · capacity ${m.capacity}`}
                  {m.id === data.workers!.answeredBy && data.workers!.lease !== undefined && ` · lease ${data.workers!.lease ? "held" : "lost"}`}
                </div>
                {m.url && <div className="muted small">{m.url}</div>}
              </li>
            ))}
          </ul>
        </section>
      )}
      {pipelines.size > 0 && (
        <section aria-labelledby="pipelines-title">
          <h2 id="pipelines-title">Pipelines ({pipelines.size})</h2>
          <ul className="cards">
            {[...pipelines.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([p, e]) => {
              const state = e.states.includes("FAILED") ? "FAILED" : e.states.every((s) => s === e.states[0]) ? e.states[0] : "MIXED";
              return (
                <li key={p} className="card" data-pipeline={p}>
                  <a href={href("builder", "pipeline", p)}>{p}</a> <StateBadge state={state} />
                  <div className="muted small">{e.connectors.length} connector{e.connectors.length > 1 ? "s" : ""}</div>
                </li>
              );
            })}
          </ul>
        </section>
      )}
      <h2>Connectors</h2>
      {data?.workers?.mode === "distributed" && (
        <p className="muted small">In, out, errors and commit lag count the tasks on every worker (the others&apos; as their last heartbeat to the cluster said).</p>
      )}
      <label className="filter">
        Filter
        <input type="search" value={filter} onChange={(e) => setFilter(e.target.value)} placeholder="name or class" />
      </label>
      {!data && !error && <p>Loading…</p>}
      {data && (
        <table className="grid" aria-label="Connectors">
          <thead>
            <tr>
              <th scope="col">Connector</th>
              <th scope="col">Class</th>
              <th scope="col">Kind</th>
              <th scope="col">State</th>
              <th scope="col">Tasks</th>
              <th scope="col" className="num">In</th>
              <th scope="col" className="num">Out</th>
              <th scope="col" className="num">Errors</th>
              <th scope="col" className="num" title="Records taken in and not yet committed (status: tasks[].metrics.commit_lag_records)">Commit lag</th>
              <th scope="col">Worker</th>
            </tr>
          </thead>
          <tbody>
            {rows.map(([name, c]) => {
              const s = c.status;
              const t = taskSummary(s);
              const r = data.rates.get(name);
              const failed = s?.tasks.find((x) => x.state === "FAILED" && x.trace) ?? (s?.connector.trace ? s.connector : null);
              const pipeline = c.info?.config["pipeline"];
              return (
                <tr key={name} data-connector={name}>
                  <td>
                    <a href={href("connectors", name)}>{name}</a>
                    {pipeline && (
                      <div className="muted small">
                        pipeline <a href={href("builder", "pipeline", pipeline)}>{pipeline}</a>
                      </div>
                    )}
                  </td>
                  <td className="small">{c.info?.config["connector.class"]}</td>
                  <td>{s?.ferry_type ?? s?.type ?? c.info?.type}</td>
                  <td>
                    {s ? <StateBadge state={s.connector.state} /> : "—"}
                    {failed && (
                      <button
                        className="link small"
                        onClick={() => setTrace({ title: `${name}: ${"id" in failed ? `task ${failed.id}` : "connector"} trace`, text: failed.trace || "" })}
                      >
                        trace
                      </button>
                    )}
                  </td>
                  <td>
                    <span data-testid="tasks">{t.running}/{t.total}</span>
                    {t.failed > 0 && <span className="badge state-failed">{t.failed} failed</span>}
                  </td>
                  <td className="num">{r ? formatRate(r.inPerSec) : "—"}</td>
                  <td className="num">{r ? formatRate(r.outPerSec) : "—"}</td>
                  <td className="num">{r ? r.errors : "—"}</td>
                  <td className="num">{r ? r.lag : "—"}</td>
                  <td className="small">{s?.connector.worker_id}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {data && rows.length === 0 && <p className="muted">No connectors{filter ? " match" : " yet"}.</p>}
      <Dialog title={trace?.title ?? ""} open={trace !== null} onClose={() => setTrace(null)}>
        <pre className="trace">{trace?.text}</pre>
        <div className="actions"><button onClick={() => setTrace(null)}>Close</button></div>
      </Dialog>
    </section>
  );
}
