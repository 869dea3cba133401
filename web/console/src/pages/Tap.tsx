// A live, sampled view of the records a connector hands on (after its transforms): a tap opened
// with POST /connectors/{name}/tap and read every second (GET /taps/{id}); closed when the view
// goes away (DELETE, also as the page unloads), and by the worker anyway when no longer read.
import { useEffect, useRef, useState } from "react";
import { authorization, enc, get, request } from "../api";
import { ErrorText } from "../components";

interface TapRecord {
  task: number;
  topic: string;
  key: string | null;
  key_encoding?: string;
  key_truncated?: boolean;
  value: string | null;
  value_encoding?: string;
  value_truncated?: boolean;
  value_size?: number;
  headers: { key: string; value: string | null; value_encoding?: string }[];
  timestamp: number;
  tapped_at: number;
}

interface TapRead {
  records: TapRecord[];
  sampled_out: number;
  overflowed: number;
}

const SHOWN = 50;

function show(text: string | null, encoding?: string, truncated?: boolean) {
  if (text === null) return <span className="muted">null</span>;
  return (
    <>
      {encoding === "base64" && <span className="badge" title="not UTF-8: shown as base64">base64</span>}
      <code>{text}</code>
      {truncated && <span className="muted small"> … (cut)</span>}
    </>
  );
}

export function TapView({ connector }: { connector: string }) {
  const [id, setId] = useState<string | null>(null);
  const [records, setRecords] = useState<(TapRecord & { n: number })[]>([]);
  const [skipped, setSkipped] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const seq = useRef(0);

  useEffect(() => {
    if (!id) return;
    let stopped = false;
    const close = () => {
      // keepalive: the request outlives the page.
      const headers: Record<string, string> = { "X-Requested-With": "XMLHttpRequest" };
      const auth = authorization();
      if (auth) headers.Authorization = auth;
      void fetch(`/taps/${enc(id)}`, { method: "DELETE", headers, keepalive: true }).catch(() => undefined);
    };
    const read = async () => {
      try {
        const r = await get<TapRead>(`/taps/${enc(id)}`);
        if (stopped) return;
        if (r.records.length)
          setRecords((old) => [...r.records.map((x) => ({ ...x, n: ++seq.current })).reverse(), ...old].slice(0, SHOWN));
        if (r.sampled_out || r.overflowed) setSkipped((s) => s + r.sampled_out + r.overflowed);
      } catch (e) {
        if (!stopped) {
          setError((e as Error).message);
          setId(null);
        }
      }
    };
    void read();
    const t = window.setInterval(read, 1000);
    window.addEventListener("pagehide", close);
    return () => {
      stopped = true;
      window.clearInterval(t);
      window.removeEventListener("pagehide", close);
      close();
    };
  }, [id]);

  const start = async () => {
    setError(null);
    setRecords([]);
    setSkipped(0);
    try {
      const r = await request<{ id: string }>("POST", `/connectors/${enc(connector)}/tap`, { max_records_per_second: 10, buffer: 100 });
      setId(r.id);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  return (
    <section aria-labelledby="tap-title">
      <h2 id="tap-title">Live records</h2>
      <p className="muted small">
        A sample of the records the connector hands on, after its transforms (at most 10 a second; the task never waits for it).
      </p>
      <div className="toolbar">
        {id ? <button onClick={() => setId(null)}>Stop watching</button> : <button onClick={start}>Watch records</button>}
        {id && <span role="status" className="muted">watching · {records.length} shown{skipped ? ` · ${skipped} not sampled` : ""}</span>}
      </div>
      <ErrorText error={error} />
      {records.length > 0 && (
        <table className="grid tap" aria-label="Live records">
          <thead><tr><th scope="col">Time</th><th scope="col">Task</th><th scope="col">Topic</th><th scope="col">Key</th><th scope="col">Value</th><th scope="col">Headers</th></tr></thead>
          <tbody>
            {records.map((r) => (
              <tr key={r.n} data-tap-record>
                <td className="small">{new Date(r.timestamp).toISOString().slice(11, 23)}</td>
                <td>{r.task}</td>
                <td className="small">{r.topic}</td>
                <td>{show(r.key, r.key_encoding, r.key_truncated)}</td>
                <td className="tap-value">{show(r.value, r.value_encoding, r.value_truncated)}</td>
                <td className="small">{r.headers.map((h, i) => <div key={i}>{h.key}: {show(h.value, h.value_encoding)}</div>)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
