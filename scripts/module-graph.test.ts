/**
 * The import graph of the product's folders, as madge would draw it: no module cycle (type-only
 * imports count: a cycle of types is still two modules that cannot be read apart), no route file
 * that imports another route file (what routes share lives in api/media/ and api/*.ts), and no process
 * spawned by api/ itself: ffmpeg's tools run through the engine's one runner (engine/decode/tool.ts).
 *
 * Why not madge itself: its TypeScript detective has a peer dependency on typescript 5 or 6, which
 * npm refuses beside this project's typescript 7. Every relative import here names its file with
 * its `.ts` extension (Node's type stripping needs that), so resolving one is a path join.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const FOLDERS = ['engine', 'api', 'workers', 'models', 'cli'];

function sourceFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        if (!['node_modules', 'cache', '.cache', 'native'].includes(e.name)) walk(p);
      } else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) {
        out.push(p);
      }
    }
  };
  for (const d of FOLDERS) walk(join(ROOT, d));
  // engine/asr/native holds C++ and a few TypeScript files; take those too.
  const native = join(ROOT, 'engine/asr/native');
  for (const e of readdirSync(native)) if (e.endsWith('.ts')) out.push(join(native, e));
  return out.sort();
}

/** Code only, so that an example in a comment is no import. */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');

/** Relative specifiers of static imports and re-exports, side-effect imports and import(). */
function relativeImports(text: string): string[] {
  const found: string[] = [];
  const patterns = [
    /\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]/g,
    /\bimport\s*['"](\.{1,2}\/[^'"]+)['"]/g,
    /\bimport\s*\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g,
  ];
  const src = code(text);
  for (const re of patterns) for (const m of src.matchAll(re)) found.push(m[1]!);
  return found;
}

type Graph = Map<string, string[]>;

function buildGraph(files: string[]): Graph {
  const inSet = new Set(files);
  const graph: Graph = new Map();
  for (const file of files) {
    const targets = relativeImports(readFileSync(file, 'utf8'))
      .map((spec) => resolve(dirname(file), spec))
      .filter((target) => inSet.has(target));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** Tarjan's strongly connected components; every component of more than one node is a cycle. */
function cycles(graph: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const rel = (p: string) => relative(ROOT, p);

describe('module graph', () => {
  const files = sourceFiles();
  const graph = buildGraph(files);

  it('sees the product (a scan that finds nothing proves nothing)', () => {
    expect(files.length).toBeGreaterThan(100);
    for (const f of ['engine/index.ts', 'api/app.ts', 'workers/index.ts', 'models/index.ts', 'cli/transcribe.ts']) {
      expect(existsSync(join(ROOT, f))).toBe(true);
      expect(graph.has(join(ROOT, f))).toBe(true);
    }
    const edges = [...graph.values()].reduce((n, targets) => n + targets.length, 0);
    expect(edges).toBeGreaterThan(files.length);
  });

  it('finds a cycle when there is one', () => {
    const g: Graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
      ['e', ['e']],
    ]);
    expect(cycles(g)).toEqual([['a', 'b', 'c'], ['e']]);
    expect(
      relativeImports("import type { X } from './x.ts';\n// import { y } from './y.ts'\nexport * from '../z.ts';"),
    ).toEqual(['./x.ts', '../z.ts']);
  });

  it(`has no module cycle in ${FOLDERS.join(', ')}`, () => {
    expect(cycles(graph).map((c) => c.map(rel))).toEqual([]);
  });

  it('has no route file that imports another route file', () => {
    const isRoute = (p: string) => rel(p).startsWith('api/routes/') && !p.endsWith('.test.ts');
    const offenders = [...graph]
      .filter(([from]) => isRoute(from))
      .flatMap(([from, targets]) => targets.filter(isRoute).map((to) => `${rel(from)} -> ${rel(to)}`));
    expect(offenders).toEqual([]);
  });

  it('has no api/ module that spawns a process', () => {
    const offenders = files
      .filter((f) => rel(f).startsWith('api/') && !f.endsWith('.test.ts') && !rel(f).startsWith('api/testing/'))
      .filter((f) => /['"](node:)?child_process['"]/.test(code(readFileSync(f, 'utf8'))))
      .map(rel);
    expect(offenders).toEqual([]);
  });
});
