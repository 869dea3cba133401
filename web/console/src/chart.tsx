// A small line chart in SVG (no chart library: a few lines of arithmetic), with an accessible
// summary of what it shows.
import { formatRate } from "./metrics";

export interface Series {
  label: string;
  color: string;
  points: [number, number][]; // [time ms, value]
}

export function LineChart({ title, series, rate = true }: { title: string; series: Series[]; rate?: boolean }) {
  const W = 560, H = 120, P = 4;
  const all = series.flatMap((s) => s.points);
  const t0 = Math.min(...all.map((p) => p[0]));
  const t1 = Math.max(...all.map((p) => p[0]));
  const peak = Math.max(0, ...all.map((p) => p[1]));
  const max = Math.max(1, peak);
  const fmt = (v: number) => (rate ? formatRate(v) : String(Math.round(v)));
  const x = (t: number) => P + ((t - t0) / Math.max(1, t1 - t0)) * (W - 2 * P);
  const y = (v: number) => H - P - (v / max) * (H - 2 * P);
  const summary =
    all.length === 0
      ? `${title}: no data yet`
      : `${title} over the last ${Math.round((t1 - t0) / 60000) || "<1"} min: ` +
        series.map((s) => `${s.label} now ${fmt(s.points[s.points.length - 1]?.[1] ?? 0)}, peak ${fmt(Math.max(0, ...s.points.map((p) => p[1])))}`).join("; ");
  return (
    <figure className="chart">
      <figcaption>
        <b>{title}</b>
        {series.map((s) => (
          <span key={s.label} className="legend">
            <span className="swatch" style={{ background: s.color }} /> {s.label} {fmt(s.points[s.points.length - 1]?.[1] ?? 0)}
          </span>
        ))}
        <span className="muted small"> peak {fmt(peak)}</span>
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={summary} preserveAspectRatio="none">
        <line x1={P} y1={H - P} x2={W - P} y2={H - P} stroke="#c7cdd6" />
        {series.map((s) =>
          s.points.length > 1 ? (
            <polyline key={s.label} fill="none" stroke={s.color} strokeWidth={2} vectorEffect="non-scaling-stroke"
              points={s.points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" ")} />
          ) : null,
        )}
      </svg>
    </figure>
  );
}
