import { Suspense, createContext, lazy, useContext, useEffect, useState } from "react";
import { ApiError, get, logout, onUnauthorized, type Whoami } from "./api";
import { useRoute, href } from "./route";
import { Login } from "./pages/Login";
import { Overview } from "./pages/Overview";
import { ConnectorPage } from "./pages/Connector";
// The canvas and the rule editor carry the largest libraries (xyflow, CodeMirror): loaded when
// first opened, so the overview comes up with the least to fetch and parse.
const Builder = lazy(() => import("./pages/Builder").then((m) => ({ default: m.Builder })));
const Rules = lazy(() => import("./pages/Rules").then((m) => ({ default: m.Rules })));
import { Cluster } from "./pages/Cluster";
import { Loggers } from "./pages/Loggers";

export interface Session {
  who: Whoami;
  canOperate: boolean; // pause, resume, restart, stop
  canAdmin: boolean; // create, edit, delete
}

const SessionContext = createContext<Session>({
  who: { authentication: false, user: null, role: "viewer" },
  canOperate: false,
  canAdmin: false,
});
export const useSession = () => useContext(SessionContext);

interface Root {
  version: string;
  commit: string;
  worker_id: string;
}

export function App() {
  const route = useRoute();
  const [who, setWho] = useState<Whoami | null>(null);
  const [needLogin, setNeedLogin] = useState(false);
  const [root, setRoot] = useState<Root | null>(null);
  const [fatal, setFatal] = useState<string | null>(null);

  const start = async () => {
    try {
      const w = await get<Whoami>("/whoami");
      setWho(w);
      setNeedLogin(false);
      setRoot(await get<Root>("/"));
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) setNeedLogin(true);
      else setFatal((e as Error).message);
    }
  };
  useEffect(() => {
    void start();
    return onUnauthorized(() => setNeedLogin(true));
  }, []);

  if (needLogin) return <Login onDone={start} />;
  if (fatal) return <main className="center"><p role="alert">The worker did not answer: {fatal}</p></main>;
  if (!who) return <main className="center"><p>Loading…</p></main>;

  const session: Session = { who, canOperate: who.role !== "viewer", canAdmin: who.role === "admin" };
  const page = route[0] || "overview";
  let content;
  if (page === "connectors" && route[1]) content = <ConnectorPage name={route[1]} />;
  else if (page === "builder") content = <Builder kind={route[1]} name={route[2]} />;
  else if (page === "cluster") content = <Cluster />;
  else if (page === "rules") content = <Rules />;
  else if (page === "loggers") content = <Loggers />;
  else content = <Overview />;

  const nav = (id: string, label: string) => (
    <a href={href(id)} aria-current={page === id ? "page" : undefined}>
      {label}
    </a>
  );
  return (
    <SessionContext.Provider value={session}>
      <header className="top">
        <a className="brand" href={href("overview")}>ferry</a>
        <nav aria-label="Main">
          {nav("overview", "Overview")}
          {nav("builder", "Pipeline builder")}
          {nav("rules", "Rules")}
          {nav("cluster", "Cluster")}
          {nav("loggers", "Log levels")}
        </nav>
        <span className="spacer" />
        {root && (
          <span className="muted" title={`commit ${root.commit}`}>
            worker {root.worker_id} · v{root.version}
          </span>
        )}
        <span className="who" data-testid="who">
          {who.authentication ? `${who.user} (${who.role})` : "authentication off"}
        </span>
        {who.authentication && (
          <button
            className="link"
            onClick={() => {
              logout();
              setNeedLogin(true);
            }}
          >
            Log out
          </button>
        )}
      </header>
      <main>
        <Suspense fallback={<p>Loading…</p>}>{content}</Suspense>
      </main>
    </SessionContext.Provider>
  );
}
