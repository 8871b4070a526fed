/**
 * Where a server's time went under load, from a V8 `.cpuprofile` (`node --cpu-prof`): self time
 * by package or Node module and by function, and inclusive time by frame outside Node's own
 * modules, counted only between the first and last sample in `node:_http_*` (start-up, whose
 * module loading and database set-up would swamp the figures, falls outside that window).
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof api/server.ts &   # then autocannon, then SIGTERM
 *   node benchmarks/cpuprofile-top.ts /tmp/prof/CPU.*.cpuprofile [--top 30]
 *
 * Percentages are of wall time in the window, idle included; divide by req/s for µs per request.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  options: { top: { type: 'string', default: '30' } },
  allowPositionals: true,
});
if (positionals.length !== 1) throw new Error('usage: cpuprofile-top.ts FILE.cpuprofile [--top N]');
const profile = JSON.parse(readFileSync(positionals[0]!, 'utf8')) as Profile;
const top = Number(values.top);

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const shortUrl = (url: string) =>
  url.replace(/.*node_modules\//, '').replace(/^file:\/\/.*?\/(api|engine|workers)\//, '$1/');
const frameKey = (n: ProfileNode) =>
  `${n.callFrame.functionName || '(anonymous)'} ${shortUrl(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
function packageOf(n: ProfileNode): string {
  const url = shortUrl(n.callFrame.url);
  if (!url) return n.callFrame.functionName;
  if (url.startsWith('node:')) return url;
  const parts = url.split('/');
  return parts.slice(0, url.startsWith('@') ? 2 : 1).join('/');
}

// A sample's time is the delta to the next one.
let t = profile.startTime;
const at = profile.timeDeltas.map((d) => (t += d));
const httpTimes = at.filter((_, i) => byId.get(profile.samples[i]!)!.callFrame.url.startsWith('node:_http_'));
if (httpTimes.length === 0) throw new Error('no sample in node:_http_*: was the server under load?');
const from = httpTimes[0]!;
const to = httpTimes[httpTimes.length - 1]!;

const selfByPackage = new Map<string, number>();
const selfByFunction = new Map<string, number>();
const inclusive = new Map<string, number>();
let total = 0;
const add = (m: Map<string, number>, k: string, d: number) => m.set(k, (m.get(k) ?? 0) + d);
for (let i = 0; i < profile.samples.length - 1; i++) {
  if (at[i]! < from || at[i]! > to) continue;
  const d = profile.timeDeltas[i + 1]!;
  const node = byId.get(profile.samples[i]!)!;
  total += d;
  add(selfByPackage, packageOf(node), d);
  add(selfByFunction, frameKey(node), d);
  // Each frame once per sample, however deep a recursion.
  const seen = new Set<string>();
  for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
    const frame = byId.get(id)!;
    if (!frame.callFrame.url || frame.callFrame.url.startsWith('node:')) continue;
    const k = frameKey(frame);
    if (!seen.has(k)) {
      seen.add(k);
      add(inclusive, k, d);
    }
  }
}

function print(title: string, m: Map<string, number>): void {
  process.stdout.write(`== ${title}\n`);
  for (const [k, d] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`${((100 * d) / total).toFixed(1).padStart(5)}%  ${k}\n`);
  }
}
process.stdout.write(`window ${((to - from) / 1e6).toFixed(2)} s\n`);
print('self, by package or Node module', selfByPackage);
print('self, by function', selfByFunction);
print('inclusive, frames outside Node', inclusive);
