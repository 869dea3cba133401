import { useCallback, useEffect, useRef, useState } from "react";

// Polls `load` every `ms` while the page is visible; `reload` fetches at once.
export function usePoll<T>(load: () => Promise<T>, ms: number, deps: unknown[] = []) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const loadRef = useRef(load);
  loadRef.current = load;
  const seq = useRef(0);
  const reload = useCallback(async () => {
    const mine = ++seq.current;
    try {
      const d = await loadRef.current();
      if (mine === seq.current) {
        setData(d);
        setError(null);
      }
    } catch (e) {
      if (mine === seq.current) setError(e as Error);
    }
  }, []);
  useEffect(() => {
    setData(null);
    void reload();
    const t = window.setInterval(() => {
      if (document.visibilityState === "visible") void reload();
    }, ms);
    return () => window.clearInterval(t);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  return { data, error, reload };
}
