// Hash routes (#/overview, #/connectors/NAME, #/builder[/PIPELINE], #/cluster): the console is
// one page served from /ui/, so a reload or a shared link lands on the same view.
import { useEffect, useState } from "react";

export function useRoute(): string[] {
  const parse = () =>
    window.location.hash
      .replace(/^#\/?/, "")
      .split("/")
      .filter((s) => s !== "")
      .map((s) => decodeURIComponent(s));
  const [route, setRoute] = useState(parse);
  useEffect(() => {
    const f = () => setRoute(parse());
    window.addEventListener("hashchange", f);
    return () => window.removeEventListener("hashchange", f);
  }, []);
  return route;
}

export function go(...segments: string[]): void {
  window.location.hash = "#/" + segments.map(encodeURIComponent).join("/");
}

export const href = (...segments: string[]) => "#/" + segments.map(encodeURIComponent).join("/");
