/**
 * The one way tests and benchmarks reach `../shared/fixtures`: a path, checked once per process
 * against the sha256 that the fixtures' own manifest.json lists, with a message that says what is
 * wrong when the folder, the file or its contents are not what the tests were written against.
 * Not imported by production code.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(import.meta.dirname, '..');
export const FIXTURES_DIR = resolve(REPO_ROOT, '../shared/fixtures');

let sums: Map<string, string> | undefined;
const verified = new Set<string>();

function manifestSums(): Map<string, string> {
  if (sums) return sums;
  if (!existsSync(FIXTURES_DIR)) {
    throw new Error(
      `The shared fixtures folder is missing: expected ${FIXTURES_DIR} (../shared/fixtures from the repo root).`,
    );
  }
  const manifest = JSON.parse(readFileSync(join(FIXTURES_DIR, 'manifest.json'), 'utf8')) as {
    files: Array<{ path: string; sha256: string }>;
  };
  sums = new Map(manifest.files.map((f) => [f.path, f.sha256]));
  return sums;
}

/** The fixtures folder's README (documentation: the manifest lists data files only, so it has no sum). */
export function fixturesReadme(): string {
  manifestSums(); // the folder is there, with its manifest
  return join(FIXTURES_DIR, 'README.md');
}

/** The fixtures the manifest lists under `dir` (e.g. 'speech/ljspeech'), as `rel` paths, sorted. */
export function fixturesUnder(dir: string): string[] {
  const prefix = `${dir.replace(/\/$/, '')}/`;
  return [...manifestSums().keys()].filter((rel) => rel.startsWith(prefix)).sort();
}

/** Absolute path of a shared fixture (`rel` as in manifest.json, e.g. 'speech/jfk/jfk.wav'). */
export function fixture(rel: string): string {
  const expected = manifestSums().get(rel);
  if (expected === undefined) throw new Error(`Fixture ${rel} is not listed in ${FIXTURES_DIR}/manifest.json.`);
  const path = join(FIXTURES_DIR, rel);
  if (!existsSync(path)) throw new Error(`Fixture missing: ${path}`);
  if (!verified.has(rel)) {
    const actual = createHash('sha256').update(readFileSync(path)).digest('hex');
    if (actual !== expected) throw new Error(`Fixture ${path} has sha256 ${actual}, expected ${expected}.`);
    verified.add(rel);
  }
  return path;
}
