/**
 * The files a set of entry points loads, followed through relative imports, and every package
 * (bare specifier) on the way. The GPU harness must run where there is no node_modules, so
 * benchmarks/gpu/pack.sh packs exactly this closure and refuses to pack when it names a package;
 * lib.test.ts keeps the harness's closure package-free in CI.
 *
 * A scan of the source text, not a TypeScript resolve: `import type` / `export type` lines are
 * skipped (Node strips them), everything else counts, including `import { type X } from 'pkg'`
 * (which Node keeps as a side-effect import). Comments that look like imports count too: it errs
 * towards packing more.
 *
 *   node benchmarks/lib/import-closure.ts ENTRY...   prints the files (relative to the repository),
 *                                                    exits 1 naming any package and who imports it
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';

export interface Closure {
  /** Absolute paths, in visiting order (entry points first). */
  files: string[];
  /** Package specifier → the first file that imports it. */
  packages: Map<string, string>;
  /** Relative imports that point nowhere: resolved path → importer. */
  missing: Map<string, string>;
}

const IMPORT_RE =
  /(?:^|[\s;])(?:import|export)\s+(type\s+)?(?:[\w*{}\s,$]*?\s+from\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Specifiers a source text loads at run time (type-only imports left out). */
export function importSpecifiers(src: string): string[] {
  const out: string[] = [];
  for (const m of src.matchAll(IMPORT_RE)) {
    if (m[1]) continue;
    const spec = m[2] ?? m[3];
    if (spec) out.push(spec);
  }
  return out;
}

export function importClosure(entries: readonly string[]): Closure {
  const files: string[] = [];
  const seen = new Set<string>();
  const packages = new Map<string, string>();
  const missing = new Map<string, string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    files.push(file);
    for (const spec of importSpecifiers(readFileSync(file, 'utf8'))) {
      if (spec.startsWith('node:')) continue;
      if (spec.startsWith('.') || spec.startsWith('/')) {
        const target = resolve(dirname(file), spec);
        if (existsSync(target)) visit(target);
        else missing.set(target, file);
      } else if (!packages.has(spec)) {
        packages.set(spec, file);
      }
    }
  };
  for (const e of entries) visit(resolve(e));
  return { files, packages, missing };
}

if (import.meta.main) {
  const entries = process.argv.slice(2);
  if (entries.length === 0) {
    console.error('usage: node benchmarks/lib/import-closure.ts ENTRY...');
    process.exit(2);
  }
  const root = resolve(import.meta.dirname, '../..');
  const c = importClosure(entries);
  for (const f of c.files) console.log(relative(root, f));
  let bad = false;
  for (const [spec, from] of c.packages) {
    console.error(`import-closure: package '${spec}' (imported by ${relative(root, from)}) is not in the bundle`);
    bad = true;
  }
  for (const [target, from] of c.missing) {
    console.error(`import-closure: ${relative(root, target)} (imported by ${relative(root, from)}) does not exist`);
    bad = true;
  }
  process.exit(bad ? 1 : 0);
}
