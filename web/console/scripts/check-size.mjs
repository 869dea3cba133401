// The console's size budget, checked by every build: the gzipped JavaScript and CSS the browser
// loads must stay within BUDGET bytes (web/README.md states it).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

const BUDGET = 300 * 1024;
const out = process.env.FERRY_CONSOLE_OUT || "dist";
let total = 0;
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (/\.(js|css|html)$/.test(name)) total += gzipSync(readFileSync(p), { level: 9 }).length;
  }
};
walk(out);
const kb = (n) => (n / 1024).toFixed(1);
if (total > BUDGET) {
  console.error(`console bundle: ${kb(total)} KiB gzipped, over the budget of ${kb(BUDGET)} KiB`);
  process.exit(1);
}
console.log(`console bundle: ${kb(total)} KiB gzipped (budget ${kb(BUDGET)} KiB)`);
