/**
 * The GPU harness runs on hosts with no node_modules (benchmarks/gpu/pack.sh packs its import closure
 * and nothing else). A package import anywhere on its way — as undici through the models resolver
 * once was — must fail here, not on the GPU host.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { importClosure, importSpecifiers } from './import-closure.ts';

const BENCH = join(import.meta.dirname, '..');

describe('import closure', () => {
  it('reads value imports, side-effect and dynamic imports, and skips type-only ones', () => {
    const src = [
      "import { a } from './a.ts';",
      "import type { B } from 'types-only';",
      "export type { C } from './c.ts';",
      "import { type D } from 'kept-by-node';",
      "import './side-effect.ts';",
      "export { e } from './e.ts';",
      "const m = await import('./lazy.ts');",
      'import {\n  f,\n  g,\n} from "undici";',
    ].join('\n');
    expect(importSpecifiers(src)).toEqual([
      './a.ts',
      'kept-by-node',
      './side-effect.ts',
      './e.ts',
      './lazy.ts',
      'undici',
    ]);
  });

  it('finds no package in what the GPU harness loads', () => {
    const c = importClosure(
      ['gpu/bench.ts', 'gpu/gen-model.ts', 'gpu/smoke.ts', 'gpu/encoder-variants.ts'].map((f) => join(BENCH, f)),
    );
    expect([...c.packages.keys()]).toEqual([]);
    expect([...c.missing.keys()]).toEqual([]);
    expect(c.files.some((f) => f.endsWith('engine/asr/index.ts'))).toBe(true);
  });

  it('names the package and its importer when there is one', () => {
    // The asr tests' fixtures resolve models, whose downloader imports undici.
    const c = importClosure([join(BENCH, '../engine/asr/testing/fixtures.ts')]);
    expect(c.packages.get('undici')).toMatch(/models\/resolve\.ts$/);
  });
});
