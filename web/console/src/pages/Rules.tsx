// The rule editor and tester: the rule language (transforms/rules/README.md) highlighted, the
// server's errors shown at their line and column, and POST /rules/test run on sample records —
// pasted, taken live from a connector through a tap, or the newest of a backbone topic — with
// each step's result.
import { useEffect, useRef, useState } from "react";
import { EditorState } from "@codemirror/state";
import { EditorView, keymap, lineNumbers, highlightActiveLine, drawSelection } from "@codemirror/view";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { StreamLanguage, HighlightStyle, syntaxHighlighting, bracketMatching } from "@codemirror/language";
import { lintGutter, setDiagnostics, type Diagnostic } from "@codemirror/lint";
import { tags } from "@lezer/highlight";
import { ApiError, enc, get, request, type Expanded } from "../api";
import { useSession } from "../App";

const KEYWORDS = new Set([
  "select", "from", "where", "as", "and", "or", "not", "foreach", "do", "incase", "case", "when", "then", "else", "end",
  "div", "mod", "true", "false", "null",
]);

// The rule language's tokens for highlighting (the server's parser is the judge of validity).
const ruleLanguage = StreamLanguage.define<{ inString: string | null }>({
  startState: () => ({ inString: null }),
  token(stream, state) {
    const quote = stream.peek();
    if (!state.inString && (quote === '"' || quote === "'" || quote === "`")) {
      stream.next();
      state.inString = quote;
    }
    if (state.inString) {
      while (!stream.eol()) {
        const c = stream.next();
        if (c === "\\") stream.next();
        else if (c === state.inString) {
          state.inString = null;
          break;
        }
      }
      return "string";
    }
    if (stream.eatSpace()) return null;
    if (stream.match("--")) {
      stream.skipToEnd();
      return "comment";
    }
    if (stream.match(/^-?\d+(\.\d+)?([eE][+-]?\d+)?/)) return "number";
    if (stream.match(/^[A-Za-z_][A-Za-z0-9_]*/)) {
      const w = stream.current().toLowerCase();
      if (KEYWORDS.has(w)) return "keyword";
      if (stream.peek() === "(") return "function";
      return "variable";
    }
    if (stream.match(/^(<=|>=|<>|!=|[=<>+\-*/%])/)) return "operator";
    stream.next();
    return null;
  },
  languageData: { commentTokens: { line: "--" } },
});

const ruleHighlight = HighlightStyle.define([
  { tag: tags.keyword, color: "#7a1fa2", fontWeight: "bold" },
  { tag: tags.string, color: "#0b6b2f" },
  { tag: tags.number, color: "#0b4a8c" },
  { tag: tags.comment, color: "#5a6573", fontStyle: "italic" },
  { tag: tags.operator, color: "#8a3b00" },
  { tag: tags.function(tags.variableName), color: "#0b5cad" },
]);

// "line 2, column 3: expected ..." in a refusal -> the position in the text.
export function errorPosition(message: string, text: string): { from: number; line: number; column: number; message: string } | null {
  const m = /line (\d+), column (\d+): ([\s\S]*)$/.exec(message);
  if (!m) return null;
  const line = Number(m[1]), column = Number(m[2]);
  const lines = text.split("\n");
  if (line < 1 || line > lines.length) return null;
  let from = 0;
  for (let i = 0; i < line - 1; i++) from += lines[i].length + 1;
  from += Math.min(Math.max(column - 1, 0), lines[line - 1].length);
  return { from, line, column, message: m[3].trim() };
}

interface StepResult {
  alias: string;
  type: string;
  result: string;
  error?: string;
  record?: unknown;
}
interface TrialRecord {
  index: number;
  result: "kept" | "dropped" | "error";
  error?: string;
  output?: unknown;
  steps: StepResult[];
}

const SAMPLE = JSON.stringify(
  [
    { topic: "sensors", mqtt_topic: "sensors/d1/data", value: { temp: 31.5, unit: "C" } },
    { topic: "sensors", mqtt_topic: "sensors/d2/data", value: { temp: 12.0, unit: "C" } },
  ],
  null,
  2,
);

function RuleEditor({ value, onChange, error }: { value: string; onChange: (v: string) => void; error: string | null }) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const onChangeRef = useRef(onChange);
  onChangeRef.current = onChange;
  useEffect(() => {
    const v = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: value,
        extensions: [
          lineNumbers(),
          history(),
          drawSelection(),
          highlightActiveLine(),
          bracketMatching(),
          keymap.of([...defaultKeymap, ...historyKeymap]),
          ruleLanguage,
          syntaxHighlighting(ruleHighlight),
          lintGutter(),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) onChangeRef.current(u.state.doc.toString());
          }),
          EditorView.contentAttributes.of({ "aria-label": "Rule", "aria-multiline": "true" }),
        ],
      }),
    });
    view.current = v;
    return () => v.destroy();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  // The server's error, marked where it says (the word there), or no mark.
  useEffect(() => {
    const v = view.current;
    if (!v) return;
    const diagnostics: Diagnostic[] = [];
    const text = v.state.doc.toString();
    const p = error ? errorPosition(error, text) : null;
    if (p) {
      const word = (/^\S+/.exec(text.slice(p.from)) || [""])[0].length;
      diagnostics.push({ from: p.from, to: Math.min(text.length, p.from + Math.max(word, 0)), severity: "error", message: p.message });
    }
    v.dispatch(setDiagnostics(v.state, diagnostics));
  }, [error]);
  return <div className="rule-editor" ref={host} data-testid="rule-editor" />;
}

interface LiveRecord {
  topic: string;
  key: string | null;
  value: string | null;
  headers: { key: string; value: string | null }[];
}

// Records shown by a tap or a topic look as /rules/test samples: JSON values parsed, the MQTT
// topic header as mqtt_topic.
function asSamples(records: LiveRecord[]) {
  return records.map((r) => {
    const mqtt = r.headers.find((h) => h.key === "mqtt.topic");
    let value: unknown = r.value;
    try {
      if (r.value !== null) value = JSON.parse(r.value);
    } catch {
      /* text */
    }
    return { topic: r.topic, ...(mqtt ? { mqtt_topic: mqtt.value } : {}), key: r.key, value, headers: Object.fromEntries(r.headers.map((h) => [h.key, h.value])) };
  });
}

export function Rules() {
  const { canAdmin, canOperate } = useSession();
  const [rule, setRule] = useState('SELECT payload.temp AS t, topic FROM "sensors/+/data" WHERE payload.temp > 30');
  const [unmatched, setUnmatched] = useState("drop");
  const [samples, setSamples] = useState(SAMPLE);
  const [results, setResults] = useState<TrialRecord[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [connectors, setConnectors] = useState<string[]>([]);
  const [source, setSource] = useState("");
  const [liveNote, setLiveNote] = useState<string | null>(null);
  const [topics, setTopics] = useState<string[]>([]);
  const [topic, setTopic] = useState("");

  useEffect(() => {
    get<Expanded>("/connectors?expand=info").then((c) => setConnectors(Object.keys(c).sort()), () => undefined);
    get<{ topics: { name: string }[] }>("/topics").then((t) => setTopics(t.topics.map((x) => x.name)), () => undefined);
  }, []);

  const run = async () => {
    setBusy(true);
    setError(null);
    setResults(null);
    let records: unknown;
    try {
      records = JSON.parse(samples);
      if (!Array.isArray(records)) throw new Error("the samples must be a JSON array of records");
    } catch (e) {
      setError(`Samples: ${(e as Error).message}`);
      setBusy(false);
      return;
    }
    try {
      const r = await request<{ records: TrialRecord[] }>("POST", "/rules/test", { rule, unmatched, records });
      setResults(r.records);
    } catch (e) {
      setError(e instanceof ApiError ? e.message : (e as Error).message);
    } finally {
      setBusy(false);
    }
  };

  // A few live records from a connector, through a tap held for up to 5 s.
  const takeLive = async () => {
    if (!source) return;
    setLiveNote("Watching " + source + "…");
    try {
      const tap = await request<{ id: string }>("POST", `/connectors/${enc(source)}/tap`, { max_records_per_second: 20, buffer: 20 });
      const got: LiveRecord[] = [];
      for (let i = 0; i < 10 && got.length < 5; i++) {
        await new Promise((r) => setTimeout(r, 500));
        const b = await get<{ records: typeof got }>(`/taps/${enc(tap.id)}`);
        got.push(...b.records);
      }
      await request("DELETE", `/taps/${enc(tap.id)}`).catch(() => undefined);
      if (!got.length) {
        setLiveNote(`No records from ${source} in 5 s.`);
        return;
      }
      const recs = asSamples(got.slice(0, 5));
      setSamples(JSON.stringify(recs, null, 2));
      setLiveNote(`${recs.length} live records from ${source}.`);
    } catch (e) {
      setLiveNote(null);
      setError((e as Error).message);
    }
  };

  // The newest records of a backbone topic (GET /topics/{name}/records): what a rule in a sink
  // or pipeline reading that topic would see.
  const takeFromTopic = async () => {
    if (!topic) return;
    setLiveNote("Reading " + topic + "…");
    try {
      const r = await get<{ records: LiveRecord[] }>(`/topics/${enc(topic)}/records?limit=5`);
      if (!r.records.length) {
        setLiveNote(`${topic} holds no records.`);
        return;
      }
      setSamples(JSON.stringify(asSamples(r.records), null, 2));
      setLiveNote(`${r.records.length} newest records of topic ${topic}.`);
    } catch (e) {
      setLiveNote(null);
      setError((e as Error).message);
    }
  };

  return (
    <section aria-labelledby="rules-title" className="rules">
      <h1 id="rules-title">Rules</h1>
      <p className="muted">
        <code>SELECT … FROM "topic/filter" WHERE …</code> or <code>FOREACH … DO … INCASE … FROM …</code>; a rule runs as the <code>Rule</code> transform
        (<code>io.ferry.transforms.Rule</code>, key <code>sql</code>) in any connector or pipeline.
      </p>
      <div className="rules-grid">
        <div>
          <h2>Rule</h2>
          <RuleEditor value={rule} onChange={setRule} error={error && /line \d+, column \d+/.test(error) ? error : null} />
          <label className="inline">
            Records whose topic matches no FROM filter
            <select value={unmatched} onChange={(e) => setUnmatched(e.target.value)}>
              <option value="drop">drop</option>
              <option value="pass">pass</option>
            </select>
          </label>
        </div>
        <div>
          <h2>Sample records</h2>
          <label className="block">
            JSON array of <code>{"{topic, mqtt_topic?, key?, value, headers?}"}</code>
            <textarea className="code" rows={12} value={samples} onChange={(e) => setSamples(e.target.value)} spellCheck={false} />
          </label>
          {canOperate && (
            <div className="toolbar">
              <select aria-label="Connector to take live records from" value={source} onChange={(e) => setSource(e.target.value)}>
                <option value="">Take live records from…</option>
                {connectors.map((c) => <option key={c} value={c}>{c}</option>)}
              </select>
              <button onClick={takeLive} disabled={!source}>Take 5 records</button>
              <select aria-label="Topic to take the newest records from" value={topic} onChange={(e) => setTopic(e.target.value)}>
                <option value="">Take the newest records of topic…</option>
                {topics.map((t) => <option key={t} value={t}>{t}</option>)}
              </select>
              <button onClick={takeFromTopic} disabled={!topic}>Take 5 from the topic</button>
              {liveNote && <span role="status" className="muted">{liveNote}</span>}
            </div>
          )}
        </div>
      </div>
      {canAdmin ? (
        <button onClick={run} disabled={busy}>Test the rule</button>
      ) : (
        <p className="muted">Testing rules needs the admin role (POST /rules/test).</p>
      )}
      {error && <pre role="alert" className="error server-error" data-testid="rule-error">{error}</pre>}
      {results && (
        <table className="grid" aria-label="Results">
          <thead><tr><th scope="col">#</th><th scope="col">Result</th><th scope="col">Output</th><th scope="col">Steps</th></tr></thead>
          <tbody>
            {results.map((r) => (
              <tr key={r.index} data-result={r.result}>
                <td>{r.index + 1}</td>
                <td><span className={`badge result-${r.result}`}>{r.result}</span>{r.error && <div className="error small">{r.error}</div>}</td>
                <td><pre className="small">{r.output ? JSON.stringify((r.output as { value?: unknown }).value ?? r.output, null, 1) : ""}</pre></td>
                <td className="small">{r.steps.map((s, i) => <div key={i}>{s.alias} ({s.type}): {s.result}{s.error ? ` — ${s.error}` : ""}</div>)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
