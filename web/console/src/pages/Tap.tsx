// A live, sampled view of the records a connector hands on (after its transforms): a tap opened
// with POST /connectors/{name}/tap and followed as server-sent events (GET /taps/{id}/events,
// read with fetch so the Authorization header goes along; EventSource cannot send it). The
// stream owns the tap: when the view goes away (or the page closes) the connection ends and the
// worker closes the tap at once.
import { useEffect, useRef, useState } from "react";
import { enc, request, requestHeaders } from "../api";
import { ErrorText } from "../components";
import { href } from "../route";

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

interface Elsewhere {
  worker: string;
  url?: string; // its REST address (GET /cluster), where its own console is
  tasks: number[];
}

export function TapView({ connector, here, elsewhere = [] }: { connector: string; here?: string; elsewhere?: Elsewhere[] }) {
  const [id, setId] = useState<string | null>(null);
  const [records, setRecords] = useState<(TapRecord & { n: number })[]>([]);
  const [skipped, setSkipped] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const seq = useRef(0);

  useEffect(() => {
    if (!id) return;
    const abort = new AbortController();
    const onBatch = (r: TapRead) => {
      if (r.records.length)
        setRecords((old) => [...r.records.map((x) => ({ ...x, n: ++seq.current })).reverse(), ...old].slice(0, SHOWN));
      if (r.sampled_out || r.overflowed) setSkipped((s) => s + r.sampled_out + r.overflowed);
    };
    (async () => {
      const res = await fetch(`/taps/${enc(id)}/events`, { headers: requestHeaders("text/event-stream"), signal: abort.signal });
      if (!res.ok || !res.body) throw new Error(`the tap's events: HTTP ${res.status}`);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let text = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += value;
        let end;
        while ((end = text.indexOf("\n\n")) >= 0) {
          const block = text.slice(0, end);
          text = text.slice(end + 2);
          let event = "message";
          let data = "";
          for (const line of block.split("\n")) {
            if (line.startsWith("event: ")) event = line.slice(7);
            else if (line.startsWith("data: ")) data += line.slice(6);
          }
          if (event === "records" && data) onBatch(JSON.parse(data) as TapRead);
          if (event === "end") throw new Error(data ? (JSON.parse(data) as { message: string }).message : "the tap ended");
        }
      }
      throw new Error("the worker closed the tap's stream");
    })().catch((e) => {
      if (abort.signal.aborted) return;
      setError((e as Error).message);
      setId(null);
    });
    return () => abort.abort();
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
      {elsewhere.length > 0 && (
        <ul className="muted small" aria-label="Tasks on other workers">
          {elsewhere.map((e) => (
            <li key={e.worker} data-elsewhere={e.worker}>
              {e.tasks.length === 1 ? "Task" : "Tasks"} {e.tasks.join(", ")} run{e.tasks.length === 1 ? "s" : ""} on {e.worker}, not on {here}:
              {" "}
              {e.url ? <a href={`${e.url}/ui/${href("connectors", connector)}`}>watch them on {e.worker}&apos;s console</a> : "watch them on its console"}.
            </li>
          ))}
        </ul>
      )}
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
