/**
 * Writes a synthetic (random-weight, real-shape) whisper.cpp model and prints its size and sha256.
 *   node scripts/synthetic-model.ts synthetic-tiny [out.bin] [--seed N]
 * Default output: models/cache/ggml-<name>.bin (where resolveModel looks for it).
 */

import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { findModel, type SyntheticName } from '../models/manifest.ts';
import { createProgressBar } from '../models/progress.ts';
import { REPO_ROOT, writeSyntheticModel } from '../models/synthetic.ts';

const { positionals, values } = parseArgs({ allowPositionals: true, options: { seed: { type: 'string' } } });
const name = positionals[0] ?? 'synthetic-tiny';
const entry = findModel(name);
if (entry?.kind !== 'synthetic') {
  console.error(`usage: node scripts/synthetic-model.ts <synthetic-tiny|synthetic-base|synthetic-large-v3> [out]`);
  process.exit(2);
}
const out = positionals[1] ?? join(REPO_ROOT, 'models', 'cache', entry.file);
const ac = new AbortController();
process.once('SIGINT', () => ac.abort());
const started = performance.now();
const bar = createProgressBar({ label: name });
const result = await writeSyntheticModel(name as SyntheticName, out, {
  seed: values.seed === undefined ? 0 : Number(values.seed),
  signal: ac.signal,
  onProgress: (p) => bar.update({ received: p.written, total: p.total }),
}).finally(() => bar.done());
const secs = ((performance.now() - started) / 1000).toFixed(1);
console.log(`${result.path}\n  bytes  ${result.bytes}\n  sha256 ${result.sha256}\n  ${secs} s`);
