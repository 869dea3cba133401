import { get, ApiError } from "../api";
import { usePoll } from "../hooks";
import { ErrorText, StateBadge } from "../components";

// GET /cluster (distributed mode): the members with their units, and who owns each unit at which
// epoch; refreshed every second, so a worker leaving and its units moving show as they happen.
interface ClusterState {
  worker: string;
  lease: boolean;
  log_offset: number;
  state_age_ms: number;
  strategy: string;
  session_timeout_ms: number;
  moves: number;
  workers: { id: string; url: string; incarnation: number; capacity: number; last_heartbeat_log_ms: number; units: number }[];
  assignment: { connector: string; task?: number; owner: string; epoch: number; state: string; handoff_to?: string }[];
}

export function Cluster() {
  const { data, error } = usePoll(async () => {
    // GET / names the worker's mode (a standalone worker answers 404 at /cluster).
    const root = await get<{ mode?: string }>("/");
    if (root.mode === "standalone") return { cluster: null, standalone: true };
    try {
      return { cluster: await get<ClusterState>("/cluster"), standalone: false };
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) return { cluster: null, standalone: true };
      throw e;
    }
  }, 1000);
  if (error && !data) return <section><h1>Cluster</h1><ErrorText error={error} /></section>;
  if (!data) return <p>Loading…</p>;
  if (data.standalone || !data.cluster)
    return (
      <section aria-labelledby="cluster-title">
        <h1 id="cluster-title">Cluster</h1>
        <p>This worker runs standalone: it owns every connector and task itself.</p>
      </section>
    );
  const c = data.cluster;
  return (
    <section aria-labelledby="cluster-title">
      <h1 id="cluster-title">Cluster</h1>
      <ErrorText error={error} />
      <p className="muted">
        Answered by {c.worker} (lease {c.lease ? "held" : "lost"}) · strategy {c.strategy} · session {c.session_timeout_ms} ms ·
        log offset {c.log_offset} · state {c.state_age_ms} ms old · {c.moves} unit moves
      </p>
      <h2>Members ({c.workers.length})</h2>
      <table className="grid" aria-label="Members">
        <thead><tr><th scope="col">Worker</th><th scope="col">URL</th><th scope="col">Incarnation</th><th scope="col" className="num">Capacity</th><th scope="col" className="num">Units</th><th scope="col" className="num">Last heartbeat (log ms)</th></tr></thead>
        <tbody>
          {c.workers.map((w) => (
            <tr key={w.id} data-member={w.id}>
              <td>{w.id}</td><td>{w.url}</td><td>{w.incarnation}</td><td className="num">{w.capacity}</td><td className="num">{w.units}</td><td className="num">{w.last_heartbeat_log_ms}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Units ({c.assignment.length})</h2>
      <table className="grid" aria-label="Units">
        <thead><tr><th scope="col">Connector</th><th scope="col">Task</th><th scope="col">Owner</th><th scope="col" className="num">Epoch</th><th scope="col">State</th><th scope="col">Hand-off to</th></tr></thead>
        <tbody>
          {c.assignment.map((u) => (
            <tr key={`${u.connector}/${u.task ?? "c"}`} data-unit={`${u.connector}/${u.task ?? "connector"}`} data-owner={u.owner}>
              <td>{u.connector}</td><td>{u.task ?? "connector"}</td><td>{u.owner}</td><td className="num">{u.epoch}</td><td><StateBadge state={u.state} /></td><td>{u.handoff_to ?? ""}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
