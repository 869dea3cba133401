import { useState } from "react";
import { enc, get, loadWorkers, request, type ConnectorInfo, type ConnectorStatus } from "../api";
import { usePoll } from "../hooks";
import { href, go } from "../route";
import { ConnectionBadge, Confirm, Dialog, ErrorText, StateBadge, diffLines } from "../components";
import { useSession } from "../App";
import { TapView } from "./Tap";
import { Charts } from "./Charts";

interface Offsets {
  offsets: { partition: Record<string, unknown>; offset: Record<string, unknown> }[];
}

export function ConnectorPage({ name }: { name: string }) {
  const { canOperate, canAdmin } = useSession();
  const base = `/connectors/${enc(name)}`;
  const { data, error, reload } = usePoll(async () => {
    const [status, info] = await Promise.all([get<ConnectorStatus>(`${base}/status`), get<ConnectorInfo>(base)]);
    return { status, info };
  }, 2000, [name]);
  // Which worker answers, and the members' REST addresses: a tap samples the tasks of the worker it
  // is opened on, so tasks running elsewhere are pointed to their worker's console.
  const { data: workers } = usePoll(loadWorkers, 10000);
  const where = workers && {
    here: workers.answeredBy,
    urls: new Map(workers.members.filter((m) => /^https?:\/\//.test(m.url ?? "")).map((m) => [m.id, m.url!])),
  };
  const [busy, setBusy] = useState(false);
  const [actionError, setActionError] = useState<string | null>(null);
  const [confirm, setConfirm] = useState<null | "delete" | "reset">(null);
  const [editing, setEditing] = useState<string | null>(null); // the config text being edited
  const [review, setReview] = useState(false);
  const [offsets, setOffsets] = useState<Offsets | null>(null);
  const [trace, setTrace] = useState<string | null>(null);

  const act = async (what: string, method: string, path: string, body?: unknown) => {
    setBusy(true);
    setActionError(null);
    try {
      await request(method, path, body);
      await reload();
    } catch (e) {
      setActionError(`${what}: ${(e as Error).message}`);
    } finally {
      setBusy(false);
    }
  };

  if (error && !data) return <section><h1>{name}</h1><ErrorText error={error} /><a href={href("overview")}>Back to the overview</a></section>;
  if (!data) return <p>Loading…</p>;
  const { status, info } = data;
  const state = status.connector.state;
  const configText = JSON.stringify(sortKeys(info.config), null, 2);
  const pipeline = info.config["pipeline"];
  const elsewhere = new Map<string, number[]>();
  if (where)
    for (const t of status.tasks)
      if (t.worker_id && t.worker_id !== where.here) elsewhere.set(t.worker_id, [...(elsewhere.get(t.worker_id) ?? []), t.id]);

  return (
    <section aria-labelledby="connector-title">
      <div className="row">
        <h1 id="connector-title">{name}</h1>
        <StateBadge state={state} />
        <span className="muted">{status.ferry_type ?? status.type} · {info.config["connector.class"]} · worker {status.connector.worker_id}</span>
      </div>
      {pipeline ? (
        <p>Part of pipeline <a href={href("builder", "pipeline", pipeline)}>{pipeline}</a>.</p>
      ) : (
        <p><a href={href("builder", "connector", name)}>Open on the canvas</a></p>
      )}
      {canOperate && (
        <div className="toolbar" role="toolbar" aria-label="Connector actions">
          <button disabled={busy || state === "PAUSED"} onClick={() => act("pause", "PUT", `${base}/pause`)}>Pause</button>
          <button disabled={busy || state === "RUNNING"} onClick={() => act("resume", "PUT", `${base}/resume`)}>Resume</button>
          <button disabled={busy || state === "STOPPED"} onClick={() => act("stop", "PUT", `${base}/stop`)}>Stop</button>
          <button disabled={busy} onClick={() => act("restart", "POST", `${base}/restart?includeTasks=true`)}>Restart</button>
          <button disabled={busy} onClick={() => act("restart failed", "POST", `${base}/restart?includeTasks=true&onlyFailed=true`)}>Restart failed tasks</button>
          {canAdmin && <button className="danger" disabled={busy} onClick={() => setConfirm("delete")}>Delete</button>}
        </div>
      )}
      <ErrorText error={actionError} />
      {status.connector.trace && (
        <p><button className="link" onClick={() => setTrace(status.connector.trace!)}>Show the connector's trace</button></p>
      )}

      <h2>Tasks</h2>
      <table className="grid" aria-label="Tasks">
        <thead>
          <tr>
            <th scope="col">Task</th><th scope="col">State</th><th scope="col">Connection</th><th scope="col">Worker</th>
            <th scope="col" className="num" title="Records taken in since the task started">In</th>
            <th scope="col" className="num" title="Records delivered since the task started">Out</th>
            <th scope="col" className="num">Errors</th><th scope="col">Progress</th><th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {status.tasks.map((t) => (
            <tr key={t.id} data-task={t.id}>
              <td>{t.id}</td>
              <td><StateBadge state={t.state} /></td>
              <td><ConnectionBadge connection={t.connection} /></td>
              <td>{t.worker_id}</td>
              <td className="num">{t.metrics?.records_in ?? "—"}</td>
              <td className="num">{t.metrics?.records_out ?? "—"}</td>
              <td className="num">{t.metrics?.errors ?? "—"}</td>
              <td>{t.progress ? `${t.progress.phase} ${t.progress.done} ${t.progress.unit}${t.progress.percent !== undefined ? ` (${t.progress.percent}%)` : ""}` : ""}</td>
              <td>
                {t.trace && <button className="link" onClick={() => setTrace(t.trace!)}>Trace</button>}
                {canOperate && <button className="link" disabled={busy} onClick={() => act(`restart task ${t.id}`, "POST", `${base}/tasks/${t.id}/restart`)}>Restart</button>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>

      <Charts connector={name} />

      {canOperate ? (
        <TapView
          connector={name}
          here={where?.here}
          elsewhere={[...elsewhere].map(([worker, tasks]) => ({ worker, tasks, url: where?.urls.get(worker) }))}
        />
      ) : (
        <section aria-labelledby="tap-title"><h2 id="tap-title">Live records</h2><p className="muted">Watching records needs the operator role.</p></section>
      )}

      <h2>Configuration</h2>
      {editing === null ? (
        <>
          <pre className="config" aria-label="Configuration">{configText}</pre>
          {canAdmin && <button onClick={() => setEditing(configText)}>Edit</button>}
        </>
      ) : (
        <>
          <label className="block">
            Configuration (JSON object; password values show as [hidden] and are kept when left so)
            <textarea className="code" rows={Math.min(30, editing.split("\n").length + 2)} value={editing} onChange={(e) => setEditing(e.target.value)} spellCheck={false} />
          </label>
          <div className="actions">
            <button onClick={() => setEditing(null)}>Cancel</button>
            <button onClick={() => setReview(true)}>Review changes</button>
          </div>
        </>
      )}
      <Dialog title="Apply these changes?" open={review} onClose={() => setReview(false)}>
        <ConfigDiff before={configText} after={editing ?? ""} />
        <div className="actions">
          <button onClick={() => setReview(false)}>Back</button>
          <button
            onClick={async () => {
              let parsed: unknown;
              try {
                parsed = JSON.parse(editing ?? "");
              } catch (e) {
                setReview(false);
                setActionError(`The configuration is not JSON: ${(e as Error).message}`);
                return;
              }
              setReview(false);
              await act("apply config", "PUT", `${base}/config`, parsed);
              setEditing(null);
            }}
          >
            Apply
          </button>
        </div>
      </Dialog>

      <h2>Offsets</h2>
      <div className="toolbar">
        <button onClick={async () => {
          try { setOffsets(await get<Offsets>(`${base}/offsets`)); } catch (e) { setActionError(`offsets: ${(e as Error).message}`); }
        }}>Show offsets</button>
        {canAdmin && (
          <button disabled={state !== "STOPPED"} title={state !== "STOPPED" ? "Stop the connector first" : undefined} onClick={() => setConfirm("reset")}>
            Reset offsets
          </button>
        )}
      </div>
      {offsets && <pre className="config" aria-label="Offsets">{JSON.stringify(offsets.offsets, null, 2)}</pre>}

      <Confirm
        open={confirm === "delete"}
        title={`Delete ${name}?`}
        message={<p>The connector and its tasks stop and its configuration is removed. Its source positions are kept.</p>}
        action="Delete"
        onCancel={() => setConfirm(null)}
        onConfirm={async () => {
          setConfirm(null);
          try {
            await request("DELETE", base);
            go("overview");
          } catch (e) {
            setActionError(`delete: ${(e as Error).message}`);
          }
        }}
      />
      <Confirm
        open={confirm === "reset"}
        title={`Reset ${name}'s offsets?`}
        message={<p>Its committed positions are removed: when resumed it starts from the beginning.</p>}
        action="Reset"
        onCancel={() => setConfirm(null)}
        onConfirm={async () => {
          setConfirm(null);
          await act("reset offsets", "DELETE", `${base}/offsets`);
          setOffsets(null);
        }}
      />
      <Dialog title="Trace" open={trace !== null} onClose={() => setTrace(null)}>
        <pre className="trace">{trace}</pre>
        <div className="actions"><button onClick={() => setTrace(null)}>Close</button></div>
      </Dialog>
    </section>
  );
}

function sortKeys(o: Record<string, string>) {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
}

function ConfigDiff({ before, after }: { before: string; after: string }) {
  const lines = diffLines(before, after);
  const changed = lines.some((l) => l.kind !== " ");
  if (!changed) return <p>No changes.</p>;
  return (
    <pre className="diff" aria-label="Changes">
      {lines.map((l, i) => (
        <div key={i} className={l.kind === "+" ? "add" : l.kind === "-" ? "del" : ""}>{l.kind} {l.text}</div>
      ))}
    </pre>
  );
}
