// A connector's throughput, errors and commit lag over the last minutes, all its tasks summed (in
// a cluster wherever they run; GET /connectors/{name}/metrics/history, sampled by the worker every 5 s).
import { enc, get } from "../api";
import { usePoll } from "../hooks";
import { LineChart } from "../chart";
import { ErrorText } from "../components";

interface History {
  interval_ms: number;
  points: { time: number; records_in_per_second: number; records_out_per_second: number; errors_per_second: number; commit_lag_records: number }[];
}

export function Charts({ connector }: { connector: string }) {
  const { data, error } = usePoll(() => get<History>(`/connectors/${enc(connector)}/metrics/history`), 5000, [connector]);
  const pts = data?.points ?? [];
  return (
    <section aria-labelledby="charts-title" data-testid="charts" data-points={pts.length}>
      <h2 id="charts-title">Last minutes</h2>
      <ErrorText error={error} />
      {data && pts.length < 2 && <p className="muted">Sampled every {data.interval_ms / 1000} s: the charts fill in as the connector runs here.</p>}
      {pts.length >= 2 && (
        <div className="charts">
          <LineChart title="Records per second" series={[
            { label: "in", color: "#0b5cad", points: pts.map((p) => [p.time, p.records_in_per_second]) },
            { label: "out", color: "#1a7f37", points: pts.map((p) => [p.time, p.records_out_per_second]) },
          ]} />
          <LineChart title="Errors per second" series={[{ label: "errors", color: "#b42318", points: pts.map((p) => [p.time, p.errors_per_second]) }]} />
          <LineChart title="Commit lag (records)" rate={false} series={[{ label: "lag", color: "#8a5a00", points: pts.map((p) => [p.time, p.commit_lag_records]) }]} />
        </div>
      )}
    </section>
  );
}
