// The worker's log levels (GET /admin/loggers; PUT /admin/loggers/{name} for admins), as Kafka
// Connect's admin API has them.
import { useState } from "react";
import { enc, get, request } from "../api";
import { usePoll } from "../hooks";
import { ErrorText } from "../components";
import { useSession } from "../App";

const LEVELS = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF"];

export function Loggers() {
  const { canAdmin } = useSession();
  const { data, error, reload } = usePoll(() => get<Record<string, { level: string; last_modified: number | null }>>("/admin/loggers"), 5000);
  const [actionError, setActionError] = useState<string | null>(null);
  const set = async (name: string, level: string) => {
    setActionError(null);
    try {
      await request("PUT", `/admin/loggers/${enc(name)}`, { level });
      await reload();
    } catch (e) {
      setActionError(`${name}: ${(e as Error).message}`);
    }
  };
  return (
    <section aria-labelledby="loggers-title">
      <h1 id="loggers-title">Log levels</h1>
      <p className="muted">The levels of this worker's loggers; a change takes effect at once and lasts until the worker restarts.</p>
      <ErrorText error={error || actionError} />
      {data && (
        <table className="grid" aria-label="Loggers">
          <thead><tr><th scope="col">Logger</th><th scope="col">Level</th><th scope="col">Changed</th></tr></thead>
          <tbody>
            {Object.entries(data).sort(([a], [b]) => a.localeCompare(b)).map(([name, l]) => (
              <tr key={name} data-logger={name}>
                <td>{name}</td>
                <td>
                  {canAdmin ? (
                    <select aria-label={`Level of ${name}`} value={l.level} onChange={(e) => set(name, e.target.value)}>
                      {LEVELS.map((x) => <option key={x} value={x}>{x}</option>)}
                    </select>
                  ) : l.level}
                </td>
                <td className="small">{l.last_modified ? new Date(l.last_modified).toLocaleString() : "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
