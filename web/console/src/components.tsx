import { useEffect, useRef, type ReactNode } from "react";
import type { State } from "./api";

export function StateBadge({ state }: { state: State }) {
  return <span className={`badge state-${String(state).toLowerCase()}`}>{state}</span>;
}

// A task's connection: connected, reconnecting or degraded, the reason and the time in its title.
export function ConnectionBadge({ connection }: { connection?: { state: string; since: string; reconnects: number; error?: string } }) {
  if (!connection) return <span aria-label="connection not known">—</span>;
  const cls = connection.state === "connected" ? "state-running" : connection.state === "reconnecting" ? "state-failed" : "state-paused";
  const title = `${connection.state} since ${connection.since}; ${connection.reconnects} lost${connection.error ? `; ${connection.error}` : ""}`;
  return <span className={`badge ${cls}`} title={title} data-connection={connection.state}>{connection.state}</span>;
}

// A modal dialog (the native <dialog>: focus is trapped and Escape closes it).
export function Dialog({ title, open, onClose, children }: { title: string; open: boolean; onClose: () => void; children: ReactNode }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} onClose={onClose} aria-labelledby="dialog-title" className="dialog">
      <h2 id="dialog-title">{title}</h2>
      {open && children}
    </dialog>
  );
}

export function Confirm({
  open, title, message, action, onConfirm, onCancel,
}: { open: boolean; title: string; message: ReactNode; action: string; onConfirm: () => void; onCancel: () => void }) {
  return (
    <Dialog title={title} open={open} onClose={onCancel}>
      <div>{message}</div>
      <div className="actions">
        <button onClick={onCancel}>Cancel</button>
        <button className="danger" onClick={onConfirm}>{action}</button>
      </div>
    </Dialog>
  );
}

export function ErrorText({ error }: { error: Error | string | null | undefined }) {
  if (!error) return null;
  return <p role="alert" className="error">{typeof error === "string" ? error : error.message}</p>;
}

// A line diff of two texts (longest common subsequence; configs are small).
export function diffLines(a: string, b: string): { kind: " " | "-" | "+"; text: string }[] {
  const x = a.split("\n"), y = b.split("\n");
  const n = x.length, m = y.length;
  const L: number[][] = Array.from({ length: n + 1 }, () => new Array(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out: { kind: " " | "-" | "+"; text: string }[] = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { out.push({ kind: " ", text: x[i] }); i++; j++; }
    else if (L[i + 1][j] >= L[i][j + 1]) out.push({ kind: "-", text: x[i++] });
    else out.push({ kind: "+", text: y[j++] });
  }
  while (i < n) out.push({ kind: "-", text: x[i++] });
  while (j < m) out.push({ kind: "+", text: y[j++] });
  return out;
}
