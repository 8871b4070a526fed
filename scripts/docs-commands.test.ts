/**
 * The commands the docs give work on the Node the README says is enough to start (Node 20): no
 * `node scripts/….ts` (Node 20 cannot run TypeScript), and every `npm run NAME` names a script in
 * package.json (npm puts the project's own Node 24 first on PATH).
 */

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const SKIP = new Set(['node_modules', 'build', '.git', '.data', 'models', '.test-output']);

function markdownFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(e.name) && dir === ROOT) continue;
    if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...markdownFiles(p));
    else if (e.name.endsWith('.md')) out.push(p);
  }
  return out;
}

describe("the docs' commands", () => {
  const files = [...markdownFiles(ROOT), join(ROOT, 'models', 'README.md')];
  // The root's scripts, and the benchmarks package's (its README says `cd benchmarks && npm run …`).
  const scripts = ['package.json', 'benchmarks/package.json'].flatMap((p) =>
    Object.keys((JSON.parse(readFileSync(join(ROOT, p), 'utf8')) as { scripts: Record<string, string> }).scripts),
  );

  it('never run a .ts script with the bare `node` of the PATH', () => {
    const bad = files.flatMap((f) =>
      [...readFileSync(f, 'utf8').matchAll(/(?<![\w/.])node scripts\/[\w/-]+\.ts/g)].map((m) => `${f}: ${m[0]}`),
    );
    expect(bad).toEqual([]);
  });

  it('name npm scripts that exist', () => {
    const named = new Set(
      files.flatMap((f) => [...readFileSync(f, 'utf8').matchAll(/npm run ([\w:-]+)/g)].map((m) => m[1]!)),
    );
    expect(named.size).toBeGreaterThan(3);
    expect([...named].filter((n) => !scripts.includes(n))).toEqual([]);
  });
});
