/**
 * Writes a synthetic model on a host without the package registry (a GPU host): the project's generator
 * (models/synthetic.ts), whose inputs ship in the repository (models/assets, models/mel-filters.ts).
 *   node benchmarks/gpu/gen-model.ts <synthetic-tiny|synthetic-base|synthetic-large-v3> <out.bin>
 */
import { existsSync } from 'node:fs';
import { findModel, type SyntheticName } from '../../models/manifest.ts';
import { writeSyntheticModel } from '../../models/synthetic.ts';

const [name, out] = process.argv.slice(2);
if (!name || !out) {
  console.error('usage: node benchmarks/gpu/gen-model.ts <synthetic-name> <out.bin>');
  process.exit(2);
}
if (existsSync(out)) {
  console.log(`${out} exists`);
} else {
  const t0 = performance.now();
  const r = await writeSyntheticModel(name as SyntheticName, out, { seed: 0 });
  console.log(`${r.path}: ${r.bytes} bytes, sha256 ${r.sha256}, ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  // The same bytes as on the development machines, or the carried repository differs from this one.
  const entry = findModel(name);
  const pinned = entry?.kind === 'synthetic' ? entry.sha256Seed0 : undefined;
  if (pinned && pinned !== r.sha256) console.warn(`warning: the manifest pins ${pinned} for ${name} (seed 0)`);
  else if (pinned) console.log('sha256 matches the manifest');
}
