// The pipeline builder: a source, a chain of transforms (rules among them) and one or more sinks
// dragged from the palette onto a canvas, wired source -> transforms -> sinks, each node's form
// generated from its plugin's declared config (GET /connector-plugins/{class}/config). Saving is
// POST/PUT /pipelines; the server validates every node before creating anything, and its errors
// ("source.rate: ...", "sinks[0].file: ...") land on the field they name.
import { useCallback, useEffect, useMemo, useRef, useState, type DragEvent } from "react";
import {
  ReactFlow,
  ReactFlowProvider,
  Background,
  Controls,
  Handle,
  Position,
  addEdge,
  useEdgesState,
  useNodesState,
  useReactFlow,
  type Connection,
  type Edge,
  type Node,
  type NodeProps,
} from "@xyflow/react";
import "@xyflow/react/dist/style.css";
import { ApiError, enc, get, pipelineErrors, request, type ConfigKey, type ConnectorInfo, type Pipeline, type Plugin } from "../api";
import { ErrorText } from "../components";
import { go, href } from "../route";
import { useSession } from "../App";
import { TEMPLATES } from "../templates";

type Kind = "source" | "transform" | "sink";

interface NodeData extends Record<string, unknown> {
  kind: Kind;
  cls: string;
  alias?: string; // transforms only
  config: Record<string, string>;
  errors?: number; // errors the server reported on this node's fields
}
type PNode = Node<NodeData>;

// Keys the pipeline sets itself; never shown in a node's form.
const MANAGED = new Set(["name", "connector.class", "pipeline", "pipeline.role", "transforms", "type", "alias"]);

// "org.apache.kafka.connect.transforms.Cast$Value" -> "Cast$Value"; ferry's aliases stay.
const shortName = (cls: string) => cls.slice(cls.lastIndexOf(".") + 1);

function PluginNode({ data, selected }: NodeProps<PNode>) {
  return (
    <div className={`pnode pnode-${data.kind}${selected ? " selected" : ""}${data.errors ? " has-errors" : ""}`} data-kind={data.kind}>
      {data.kind !== "source" && <Handle type="target" position={Position.Left} />}
      <div className="pnode-kind">{data.kind}{data.alias ? ` · ${data.alias}` : ""}</div>
      <div className="pnode-class">{shortName(data.cls)}</div>
      {data.errors ? <div className="pnode-errors">{data.errors} error{data.errors > 1 ? "s" : ""}</div> : null}
      {data.kind !== "sink" && <Handle type="source" position={Position.Right} />}
    </div>
  );
}
const nodeTypes = { plugin: PluginNode };

// A message for the next canvas shown (the saved pipeline's page, after a first save).
let flash: string | null = null;

let counter = 0;
const newId = () => `n${Date.now().toString(36)}${(counter++).toString(36)}`;

// The pipeline the canvas describes: the source, the chain of transforms reached from it by
// single edges, and the sinks fed by the chain's last node. Problems are named, not guessed.
function toPipeline(name: string, mode: "direct" | "backbone", topic: string, nodes: PNode[], edges: Edge[]) {
  const problems: string[] = [];
  const sources = nodes.filter((n) => n.data.kind === "source");
  if (sources.length !== 1) problems.push(sources.length ? "Use one source." : "Add a source.");
  const out = (id: string) => edges.filter((e) => e.source === id).map((e) => nodes.find((n) => n.id === e.target)!).filter(Boolean);
  const chain: PNode[] = [];
  let sinks: PNode[] = [];
  if (sources.length === 1) {
    let at: PNode = sources[0];
    const seen = new Set([at.id]);
    for (;;) {
      const next = out(at.id);
      const transforms = next.filter((n) => n.data.kind === "transform");
      if (transforms.length > 1) {
        problems.push(`${shortName(at.data.cls)} leads to ${transforms.length} transforms: transforms form one chain.`);
        break;
      }
      if (transforms.length === 1 && !seen.has(transforms[0].id)) {
        if (next.some((n) => n.data.kind === "sink")) problems.push("Sinks follow the last transform, not one in the middle.");
        at = transforms[0];
        seen.add(at.id);
        chain.push(at);
        continue;
      }
      sinks = next.filter((n) => n.data.kind === "sink");
      break;
    }
  }
  if (sources.length === 1 && sinks.length === 0) problems.push("Connect at least one sink after the source and its transforms.");
  const loose = nodes.filter((n) => n.data.kind !== "source" && !chain.includes(n) && !sinks.includes(n));
  if (loose.length) problems.push(`${loose.map((n) => shortName(n.data.cls)).join(", ")} ${loose.length > 1 ? "are" : "is"} not connected.`);
  if (mode === "direct" && sinks.length > 1) problems.push("A direct pipeline has one sink; use backbone mode for several.");
  const aliases = new Set<string>();
  for (const t of chain) {
    if (!t.data.alias) problems.push(`A ${shortName(t.data.cls)} transform needs an alias.`);
    else if (aliases.has(t.data.alias)) problems.push(`The alias ${t.data.alias} is used twice.`);
    aliases.add(t.data.alias ?? "");
  }
  const clean = (c: Record<string, string>) => Object.fromEntries(Object.entries(c).filter(([, v]) => v !== ""));
  const p: Pipeline = {
    name,
    mode,
    source: sources[0] ? { "connector.class": sources[0].data.cls, ...clean(sources[0].data.config) } : {},
    transforms: chain.map((t) => ({ alias: t.data.alias ?? "", type: t.data.cls, ...clean(t.data.config) })),
    sinks: sinks.map((s) => ({ "connector.class": s.data.cls, ...clean(s.data.config) })),
  };
  if (mode === "backbone" && topic) p.topic = topic;
  return { pipeline: p, problems, sinkOrder: sinks.map((s) => s.id), chain };
}

// Nodes and edges for a pipeline read from the server (or a template).
function fromPipeline(p: Pipeline): { nodes: PNode[]; edges: Edge[] } {
  const nodes: PNode[] = [];
  const edges: Edge[] = [];
  const split = (c: Record<string, string>, classKey: string) => {
    const { [classKey]: cls, ...rest } = c;
    return { cls: cls ?? "", config: rest };
  };
  const s = split(p.source ?? {}, "connector.class");
  let prev: string | null = null;
  if (s.cls) {
    prev = newId();
    nodes.push({ id: prev, type: "plugin", position: { x: 0, y: 80 }, data: { kind: "source", cls: s.cls, config: s.config } });
  }
  (p.transforms ?? []).forEach((t, i) => {
    const { alias, ...rest } = t;
    const x = split(rest, "type");
    const id = newId();
    nodes.push({ id, type: "plugin", position: { x: 240 * (i + 1), y: 80 }, data: { kind: "transform", cls: x.cls, alias, config: x.config } });
    if (prev) edges.push({ id: `e-${prev}-${id}`, source: prev, target: id });
    prev = id;
  });
  const sinks = p.sinks ?? (p.sink ? [p.sink] : []);
  const col = 240 * ((p.transforms?.length ?? 0) + 1);
  sinks.forEach((k, i) => {
    const x = split(k, "connector.class");
    const id = newId();
    nodes.push({ id, type: "plugin", position: { x: col, y: 80 + (i - (sinks.length - 1) / 2) * 110 }, data: { kind: "sink", cls: x.cls, config: x.config } });
    if (prev) edges.push({ id: `e-${prev}-${id}`, source: prev, target: id });
  });
  return { nodes, edges };
}

// A plain connector as a pipeline shape: a direct connector (its sink under sink.*), a source or
// a sink with its transforms.
function connectorAsPipeline(info: ConnectorInfo): Pipeline {
  const c = { ...info.config };
  const transforms: Record<string, string>[] = [];
  for (const alias of (c["transforms"] || "").split(",").map((s) => s.trim()).filter(Boolean)) {
    const t: Record<string, string> = { alias };
    for (const k of Object.keys(c))
      if (k.startsWith(`transforms.${alias}.`)) {
        t[k.slice(`transforms.${alias}.`.length)] = c[k];
        delete c[k];
      }
    transforms.push(t);
  }
  delete c["transforms"];
  delete c["name"];
  const sink: Record<string, string> = {};
  for (const k of Object.keys(c))
    if (k.startsWith("sink.")) {
      sink[k.slice(5)] = c[k];
      delete c[k];
    }
  if (info.type === "sink") return { name: info.name, source: {}, transforms, sinks: [c] };
  return { name: info.name, mode: "direct", source: c, transforms, sinks: sink["connector.class"] ? [sink] : [] };
}

// A plain connector's config from the canvas: a direct connector (source, transforms, its sink
// under sink.*), a source or a sink with its transforms. Transforms in the order the edges give.
function toConnectorConfig(nodes: PNode[], edges: Edge[]) {
  const problems: string[] = [];
  const sources = nodes.filter((n) => n.data.kind === "source");
  const sinks = nodes.filter((n) => n.data.kind === "sink");
  if (sources.length > 1) problems.push("A connector has one source.");
  if (sinks.length > 1) problems.push("A connector has at most one sink.");
  if (!sources.length && !sinks.length) problems.push("Add a source or a sink.");
  const transforms = nodes.filter((n) => n.data.kind === "transform");
  const next = (id: string) => edges.filter((e) => e.source === id).map((e) => transforms.find((t) => t.id === e.target)).find(Boolean);
  const first = transforms.find((t) => !edges.some((e) => e.target === t.id && transforms.some((x) => x.id === e.source)));
  const chain: PNode[] = [];
  for (let at = sources[0] ? next(sources[0].id) : first; at && !chain.includes(at); at = next(at.id)) chain.push(at);
  if (chain.length !== transforms.length) problems.push("Transforms form one chain.");
  const clean = (c: Record<string, string>) => Object.entries(c).filter(([, v]) => v !== "");
  const config: Record<string, string> = {};
  const main = sources[0] ?? sinks[0];
  if (main) {
    for (const [k, v] of clean(main.data.config)) config[k] = v;
    config["connector.class"] = main.data.cls;
  }
  if (chain.length) config["transforms"] = chain.map((t) => t.data.alias ?? "").join(",");
  for (const t of chain) {
    config[`transforms.${t.data.alias}.type`] = t.data.cls;
    for (const [k, v] of clean(t.data.config)) config[`transforms.${t.data.alias}.${k}`] = v;
  }
  if (sources[0] && sinks[0]) {
    config["sink.connector.class"] = sinks[0].data.cls;
    for (const [k, v] of clean(sinks[0].data.config)) config[`sink.${k}`] = v;
  }
  return { config, problems };
}

// "... contains the following 2 errors: rate: Invalid ...; sink.file: Missing ...\n..." -> key -> messages.
function connectorErrors(message: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const m = /errors?: ([^\n]*)/.exec(message);
  if (!m) return out;
  for (const part of m[1].split("; ")) {
    const f = /^([A-Za-z0-9_.$-]+): ([\s\S]*)$/.exec(part);
    if (f) (out[f[1]] ||= []).push(f[2]);
  }
  return out;
}

function Field({ k, value, error, onChange }: { k: ConfigKey; value: string; error?: string[]; onChange: (v: string) => void }) {
  const id = `f-${k.name}`;
  const type = k.type.toUpperCase();
  const placeholder = k.default_value ?? "";
  const common = {
    id,
    name: k.name,
    "aria-invalid": error ? true : undefined,
    "aria-describedby": `${id}-doc${error ? ` ${id}-err` : ""}`,
  };
  let input;
  if (type === "BOOLEAN")
    input = (
      <select {...common} value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">{placeholder ? `default (${placeholder})` : "default"}</option>
        <option value="true">true</option>
        <option value="false">false</option>
      </select>
    );
  else if (type === "PASSWORD") input = <input {...common} type="password" autoComplete="off" value={value} onChange={(e) => onChange(e.target.value)} />;
  else if (k.name === "sql" || (value && value.length > 60))
    input = <textarea {...common} className="code" rows={4} value={value} placeholder={placeholder} onChange={(e) => onChange(e.target.value)} spellCheck={false} />;
  else
    input = (
      <input
        {...common}
        inputMode={["INT", "LONG", "SHORT", "DOUBLE"].includes(type) ? "decimal" : undefined}
        value={value}
        placeholder={placeholder}
        onChange={(e) => onChange(e.target.value)}
      />
    );
  return (
    <div className={`field${error ? " invalid" : ""}`} data-field={k.name}>
      <label htmlFor={id}>
        {k.display_name || k.name}
        {k.required && <span className="req" aria-label="required"> *</span>}
        <span className="muted small"> {type.toLowerCase()}</span>
      </label>
      {input}
      <div id={`${id}-doc`} className="doc">{k.documentation}</div>
      {error && <div id={`${id}-err`} className="field-error" role="alert">{error.join(" ")}</div>}
    </div>
  );
}

function NodeForm({ node, errors, onChange, onAlias, onRemove, readOnly }: {
  node: PNode;
  errors: Record<string, string[]>;
  onChange: (key: string, value: string) => void;
  onAlias: (alias: string) => void;
  onRemove: () => void;
  readOnly: boolean;
}) {
  const [keys, setKeys] = useState<ConfigKey[] | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [all, setAll] = useState(false);
  useEffect(() => {
    setKeys(null);
    setLoadError(null);
    get<ConfigKey[]>(`/connector-plugins/${enc(node.data.cls)}/config`).then(setKeys, (e) => setLoadError((e as Error).message));
  }, [node.data.cls]);
  const shown = useMemo(() => {
    if (!keys) return [];
    const mine = keys.filter((k) => !MANAGED.has(k.name));
    // The plugin's own keys (and required and set ones) first; the runtime's common keys on demand.
    const common = (k: ConfigKey) => k.group === "Common" || k.group === "Transforms" || k.group === "Predicates" || k.group === "Error Handling" || k.group === "Exactly Once Support" || k.group === "offsets.topic" || k.group === "Topic Creation";
    return all ? mine : mine.filter((k) => !common(k) || k.required || node.data.config[k.name] !== undefined || errors[k.name]);
  }, [keys, all, node.data.config, errors]);
  const extra = Object.keys(node.data.config).filter((k) => keys && !keys.some((x) => x.name === k));
  return (
    <form className="node-form" aria-label={`${node.data.kind} ${shortName(node.data.cls)} settings`} onSubmit={(e) => e.preventDefault()}>
      <h2>{node.data.kind}: {shortName(node.data.cls)}</h2>
      <fieldset disabled={readOnly}>
        {node.data.kind === "transform" && (
          <div className={`field${errors["alias"] ? " invalid" : ""}`}>
            <label htmlFor="f-alias">Alias<span className="req" aria-label="required"> *</span></label>
            <input id="f-alias" value={node.data.alias ?? ""} onChange={(e) => onAlias(e.target.value.replace(/[^A-Za-z0-9_-]/g, ""))} />
          </div>
        )}
        <ErrorText error={loadError} />
        {shown.map((k) => (
          <Field key={k.name} k={k} value={node.data.config[k.name] ?? ""} error={errors[k.name]} onChange={(v) => onChange(k.name, v)} />
        ))}
        {extra.map((name) => (
          <div className="field" key={name} data-field={name}>
            <label htmlFor={`f-${name}`}>{name} <span className="muted small">not declared by the plugin</span></label>
            <input id={`f-${name}`} value={node.data.config[name]} onChange={(e) => onChange(name, e.target.value)} />
            {errors[name] && <div className="field-error" role="alert">{errors[name].join(" ")}</div>}
          </div>
        ))}
        {keys && (
          <button type="button" className="link" onClick={() => setAll(!all)}>
            {all ? "Show the plugin's own settings only" : "Show every setting"}
          </button>
        )}
        <div className="actions">
          <button type="button" className="danger" onClick={onRemove}>Remove node</button>
        </div>
      </fieldset>
    </form>
  );
}

function Palette({ plugins, onAdd }: { plugins: Plugin[]; onAdd: (p: Plugin) => void }) {
  const [q, setQ] = useState("");
  const groups: [string, Plugin[]][] = [
    ["Sources", plugins.filter((p) => p.type === "source")],
    ["Transforms and rules", plugins.filter((p) => p.type === "transformation")],
    ["Sinks", plugins.filter((p) => p.type === "sink")],
  ];
  const f = q.trim().toLowerCase();
  return (
    <aside className="palette" aria-label="Palette">
      <input type="search" aria-label="Find a plugin" placeholder="Find a plugin" value={q} onChange={(e) => setQ(e.target.value)} />
      {groups.map(([title, list]) => (
        <section key={title} aria-label={title}>
          <h3>{title}</h3>
          <ul>
            {list
              .filter((p) => !f || p.class.toLowerCase().includes(f))
              .map((p) => (
                <li key={p.class}>
                  <button
                    className="palette-item"
                    draggable
                    data-plugin={p.class}
                    title={`${p.class} — drag onto the canvas, or press Enter to add it`}
                    onDragStart={(e) => {
                      e.dataTransfer.setData("application/x-ferry-plugin", JSON.stringify(p));
                      e.dataTransfer.effectAllowed = "copy";
                    }}
                    onClick={() => onAdd(p)}
                  >
                    {shortName(p.class)}
                  </button>
                </li>
              ))}
          </ul>
        </section>
      ))}
    </aside>
  );
}

function Canvas({ pipelineName, connectorName }: { pipelineName?: string; connectorName?: string }) {
  const { canAdmin } = useSession();
  const [plugins, setPlugins] = useState<Plugin[]>([]);
  const [nodes, setNodes, onNodesChange] = useNodesState<PNode>([]);
  const [edges, setEdges, onEdgesChange] = useEdgesState<Edge>([]);
  const [selected, setSelected] = useState<string | null>(null);
  const [name, setName] = useState(pipelineName ?? "");
  const [mode, setMode] = useState<"direct" | "backbone">("direct");
  const [topic, setTopic] = useState("");
  const [errors, setErrors] = useState<Record<string, string[]>>({});
  const [message, setMessage] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(() => {
    const f = flash;
    flash = null;
    return f;
  });
  const [busy, setBusy] = useState(false);
  const [existing, setExisting] = useState(false);
  const flow = useReactFlow<PNode, Edge>();
  const wrapper = useRef<HTMLDivElement>(null);

  useEffect(() => {
    get<Plugin[]>("/connector-plugins?connectorsOnly=false").then(setPlugins, (e) => setMessage((e as Error).message));
  }, []);

  const load = useCallback((p: Pipeline, isExisting: boolean) => {
    const g = fromPipeline(p);
    setNodes(g.nodes);
    setEdges(g.edges);
    setName(p.name);
    setMode(p.mode ?? "direct");
    setTopic(p.topic ?? "");
    setErrors({});
    setMessage(null);
    setExisting(isExisting);
    setSelected(null);
    window.setTimeout(() => flow.fitView({ padding: 0.3 }), 0);
  }, [flow, setEdges, setNodes]);

  useEffect(() => {
    if (pipelineName) get<Pipeline>(`/pipelines/${enc(pipelineName)}`).then((p) => load(p, true), (e) => setMessage((e as Error).message));
    else if (connectorName)
      get<ConnectorInfo>(`/connectors/${enc(connectorName)}`).then((i) => load(connectorAsPipeline(i), false), (e) => setMessage((e as Error).message));
    else load({ name: "", source: {}, transforms: [], sinks: [] } as Pipeline, false);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [pipelineName, connectorName]);

  const addNode = useCallback((p: Plugin, position?: { x: number; y: number }) => {
    const kind: Kind = p.type === "source" ? "source" : p.type === "sink" ? "sink" : "transform";
    const id = newId();
    setNodes((ns) => {
      const transforms = ns.filter((n) => n.data.kind === "transform");
      const base = shortName(p.class).replace(/\$.*/, "").replace(/[^A-Za-z0-9]/g, "").toLowerCase() || "t";
      let alias = base, i = 2;
      while (transforms.some((t) => t.data.alias === alias)) alias = `${base}${i++}`;
      const pos = position ?? { x: kind === "source" ? 0 : kind === "transform" ? 240 * (transforms.length + 1) : 240 * (transforms.length + 2), y: 80 + ns.filter((n) => n.data.kind === kind).length * 110 };
      return [...ns, { id, type: "plugin", position: pos, data: { kind, cls: p.class, alias: kind === "transform" ? alias : undefined, config: {} } }];
    });
    // Wire it where it most likely belongs: a transform at the end of the chain (the sinks move
    // behind it), a sink after the chain, a source before the first transform or the sinks.
    setEdges((es) => {
      const ns = flow.getNodes();
      const source = ns.find((n) => n.data.kind === "source");
      let end = source?.id;
      for (let guard = 0; end && guard < 100; guard++) {
        const next = es.find((e) => e.source === end && ns.find((n) => n.id === e.target)?.data.kind === "transform");
        if (!next) break;
        end = next.target;
      }
      if (kind === "transform" && end) {
        const moved = es.filter((e) => e.source === end && ns.find((n) => n.id === e.target)?.data.kind === "sink");
        const rest = es.filter((e) => !moved.includes(e));
        return [...rest, { id: `e-${end}-${id}`, source: end, target: id }, ...moved.map((e) => ({ ...e, id: `e-${id}-${e.target}`, source: id }))];
      }
      if (kind === "sink" && end) return [...es, { id: `e-${end}-${id}`, source: end, target: id }];
      if (kind === "source" && !source) {
        const first = ns.filter((n) => n.id !== id && !es.some((e) => e.target === n.id));
        return [...es, ...first.map((n) => ({ id: `e-${id}-${n.id}`, source: id, target: n.id }))];
      }
      return es;
    });
    setSelected(id);
    setSaved(null);
  }, [flow, setEdges, setNodes]);

  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    const raw = e.dataTransfer.getData("application/x-ferry-plugin");
    if (!raw) return;
    const p = JSON.parse(raw) as Plugin;
    addNode(p, flow.screenToFlowPosition({ x: e.clientX, y: e.clientY }));
  };

  const onConnect = useCallback((c: Connection) => setEdges((es) => addEdge(c, es)), [setEdges]);
  const built = useMemo(() => toPipeline(name, mode, topic, nodes, edges), [name, mode, topic, nodes, edges]);

  // Server errors by node: "source.x", "sinks[i].x", "transforms.alias.x".
  const errorsOf = (n: PNode, errs: Record<string, string[]>): Record<string, string[]> => {
    const out: Record<string, string[]> = {};
    if (connectorName) {
      // A connector's keys: transforms.<alias>.x, sink.x (a direct connector's sink), the rest.
      const direct = nodes.some((x) => x.data.kind === "source") && nodes.some((x) => x.data.kind === "sink");
      for (const [field, msgs] of Object.entries(errs)) {
        if (n.data.kind === "transform") {
          if (field.startsWith(`transforms.${n.data.alias}.`)) out[field.slice(`transforms.${n.data.alias}.`.length)] = msgs;
        } else if (n.data.kind === "sink" && direct) {
          if (field.startsWith("sink.")) out[field.slice(5)] = msgs;
        } else if (!field.startsWith("transforms.") && !(direct && field.startsWith("sink."))) {
          out[field] = msgs;
        }
      }
      return out;
    }
    const prefix =
      n.data.kind === "source" ? "source." :
      n.data.kind === "sink" ? `sinks[${built.sinkOrder.indexOf(n.id)}].` :
      `transforms.${n.data.alias}.`;
    for (const [field, msgs] of Object.entries(errs)) if (field.startsWith(prefix)) out[field.slice(prefix.length)] = msgs;
    return out;
  };
  const errorsFor = (n: PNode) => errorsOf(n, errors);
  const shownNodes = nodes.map((n) => {
    const count = Object.keys(errorsFor(n)).length;
    return count === (n.data.errors ?? 0) ? n : { ...n, data: { ...n.data, errors: count } };
  });

  const connectorBuilt = useMemo(() => toConnectorConfig(nodes, edges), [nodes, edges]);
  const saveConnector = async () => {
    if (!connectorName) return;
    setBusy(true);
    setErrors({});
    setMessage(null);
    setSaved(null);
    try {
      await request("PUT", `/connectors/${enc(connectorName)}/config`, connectorBuilt.config);
      setSaved(`Connector ${connectorName} saved.`);
    } catch (e) {
      const msg = (e as Error).message;
      setErrors(e instanceof ApiError && e.status === 400 ? connectorErrors(msg) : {});
      setMessage(msg);
    } finally {
      setBusy(false);
    }
  };

  const save = async () => {
    setBusy(true);
    setErrors({});
    setMessage(null);
    setSaved(null);
    try {
      if (existing) await request("PUT", `/pipelines/${enc(name)}`, built.pipeline);
      else await request("POST", "/pipelines", built.pipeline);
      setExisting(true);
      setSaved(`Pipeline ${name} saved and deployed.`);
      if (pipelineName !== name) {
        // The page of the saved pipeline replaces this one; it shows the message.
        flash = `Pipeline ${name} saved and deployed.`;
        go("builder", "pipeline", name);
      }
    } catch (e) {
      const msg = (e as Error).message;
      const byField = e instanceof ApiError && e.status === 400 ? pipelineErrors(msg) : {};
      setErrors(byField);
      setMessage(msg);
      // Open the first node with an error.
      const first = nodes.find((n) => Object.keys(errorsOf(n, byField)).length > 0);
      if (first) setSelected(first.id);
    } finally {
      setBusy(false);
    }
  };

  const node = nodes.find((n) => n.id === selected);
  const update = (id: string, f: (d: NodeData) => NodeData) => {
    setNodes((ns) => ns.map((n) => (n.id === id ? { ...n, data: f(n.data) } : n)));
    setSaved(null);
  };

  return (
    <div className="builder">
      <Palette plugins={plugins} onAdd={(p) => addNode(p)} />
      <div className="canvas-column">
        <form className="pipeline-bar" aria-label="Pipeline" onSubmit={(e) => { e.preventDefault(); void save(); }}>
          <label>
            Name
            <input value={name} onChange={(e) => setName(e.target.value)} disabled={existing || !!connectorName} required pattern="[A-Za-z0-9._\-]+" aria-invalid={errors["name"] ? true : undefined} />
          </label>
          <fieldset className="mode">
            <legend>Mode</legend>
            <label><input type="radio" name="mode" checked={mode === "direct"} onChange={() => setMode("direct")} disabled={existing || !!connectorName} /> direct</label>
            <label><input type="radio" name="mode" checked={mode === "backbone"} onChange={() => setMode("backbone")} disabled={existing || !!connectorName} /> through the backbone</label>
          </fieldset>
          {mode === "backbone" && (
            <label>
              Topic
              <input value={topic} placeholder={`pipeline-${name || "name"}`} onChange={(e) => setTopic(e.target.value)} />
            </label>
          )}
          <select aria-label="Start from a template" value="" onChange={(e) => { const t = TEMPLATES.find((x) => x.id === e.target.value); if (t) load(t.pipeline, false); }}>
            <option value="">Start from a template…</option>
            {TEMPLATES.map((t) => <option key={t.id} value={t.id}>{t.title}</option>)}
          </select>
          {canAdmin && !connectorName && (
            <button type="submit" disabled={busy || built.problems.length > 0 || !name}>{existing ? "Save changes" : "Deploy"}</button>
          )}
          {canAdmin && connectorName && (
            <button type="button" onClick={saveConnector} disabled={busy || connectorBuilt.problems.length > 0}>Save connector</button>
          )}
          {existing && canAdmin && (
            <button type="button" className="danger" onClick={async () => {
              if (!window.confirm(`Delete pipeline ${name} and its connectors?`)) return;
              try { await request("DELETE", `/pipelines/${enc(name)}`); go("overview"); } catch (e) { setMessage((e as Error).message); }
            }}>Delete</button>
          )}
        </form>
        {connectorName && <p className="muted">Connector {connectorName}: saving writes its configuration (<code>PUT /connectors/{connectorName}/config</code>); its page has the JSON and the diff.</p>}
        {(connectorName ? connectorBuilt.problems : built.problems).length > 0 && nodes.length > 0 && (
          <ul className="problems" aria-label="What the canvas still needs">{(connectorName ? connectorBuilt.problems : built.problems).map((p) => <li key={p}>{p}</li>)}</ul>
        )}
        {nodes.length === 0 && <p className="muted hint">Drag a source, transforms and sinks from the palette onto the canvas (or pick one and press Enter), or start from a template.</p>}
        {message && <pre role="alert" className="error server-error">{message}</pre>}
        {saved && <p role="status" className="ok">{saved} <a href={href("overview")}>See it in the overview</a></p>}
        <div className="canvas" ref={wrapper} onDragOver={(e) => { e.preventDefault(); e.dataTransfer.dropEffect = "copy"; }} onDrop={onDrop} data-testid="canvas">
          <ReactFlow<PNode, Edge>
            nodes={shownNodes}
            edges={edges}
            nodeTypes={nodeTypes}
            onNodesChange={onNodesChange}
            onEdgesChange={onEdgesChange}
            onConnect={onConnect}
            onNodeClick={(_, n) => setSelected(n.id)}
            onPaneClick={() => setSelected(null)}
            fitView
            fitViewOptions={{ maxZoom: 1 }}
            proOptions={{ hideAttribution: true }}
            deleteKeyCode={["Delete"]}
          >
            <Background />
            <Controls showInteractive={false} />
          </ReactFlow>
        </div>
      </div>
      <div className="inspector">
        {node ? (
          <NodeForm
            key={node.id}
            node={node}
            errors={errorsFor(node)}
            readOnly={!canAdmin}
            onChange={(k, v) => update(node.id, (d) => ({ ...d, config: { ...d.config, [k]: v } }))}
            onAlias={(a) => update(node.id, (d) => ({ ...d, alias: a }))}
            onRemove={() => {
              setNodes((ns) => ns.filter((n) => n.id !== node.id));
              setEdges((es) => es.filter((e) => e.source !== node.id && e.target !== node.id));
              setSelected(null);
            }}
          />
        ) : (
          <div className="muted">
            <p>Select a node to edit its settings.</p>
            {nodes.length > 0 && <p>Nodes: {nodes.map((n) => shortName(n.data.cls)).join(" → ")}</p>}
          </div>
        )}
        {nodes.length > 0 && (
          <ul className="node-list" aria-label="Nodes">
            {nodes.map((n) => (
              <li key={n.id}>
                <button className={`link${n.id === selected ? " current" : ""}`} onClick={() => setSelected(n.id)} data-node={n.data.cls}>
                  {n.data.kind}: {shortName(n.data.cls)}{n.data.alias ? ` (${n.data.alias})` : ""}
                </button>
              </li>
            ))}
          </ul>
        )}
      </div>
    </div>
  );
}

export function Builder({ kind, name }: { kind?: string; name?: string }) {
  return (
    <section aria-labelledby="builder-title" className="builder-page">
      <h1 id="builder-title">{kind === "pipeline" && name ? `Pipeline ${name}` : kind === "connector" && name ? `Connector ${name}` : "New pipeline"}</h1>
      <ReactFlowProvider>
        <Canvas key={`${kind}/${name}`} pipelineName={kind === "pipeline" ? name : undefined} connectorName={kind === "connector" ? name : undefined} />
      </ReactFlowProvider>
    </section>
  );
}
