/**
 * Writes a synthetic model where the shared fixtures folder is absent (a GPU host): the project's
 * generator (models/synthetic.ts) with its inputs read from the carried bundle.
 *   node benchmarks/gpu/gen-model.ts <synthetic-tiny|synthetic-base|synthetic-large-v3> <out.bin> <fixturesDir>
 */
import { existsSync } from 'node:fs';
import { findModel, type SyntheticName } from '../../models/manifest.ts';
import { writeSyntheticModel } from '../../models/synthetic.ts';

const [name, out, fixturesDir] = process.argv.slice(2);
if (!name || !out || !fixturesDir) {
  console.error('usage: node benchmarks/gpu/gen-model.ts <synthetic-name> <out.bin> <fixturesDir>');
  process.exit(2);
}
if (existsSync(out)) {
  console.log(`${out} exists`);
} else {
  const t0 = performance.now();
  const r = await writeSyntheticModel(name as SyntheticName, out, { seed: 0, fixturesDir });
  console.log(`${r.path}: ${r.bytes} bytes, sha256 ${r.sha256}, ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  // The same bytes as on the development machines, or the carried inputs differ from the pinned ones.
  const entry = findModel(name);
  const pinned = entry?.kind === 'synthetic' ? entry.sha256Seed0 : undefined;
  if (pinned && pinned !== r.sha256) console.warn(`warning: the manifest pins ${pinned} for ${name} (seed 0)`);
  else if (pinned) console.log('sha256 matches the manifest');
}
