/**
 * The one way tests and benchmarks reach `../shared/fixtures`, the OPTIONAL corpus of real recordings
 * with reference transcripts and third-party artifacts no dependency ships (whisper.cpp's Silero VAD
 * in ggml form, its for-tests model files): a path, checked once per process against the sha256 that
 * the corpus' own manifest.json lists, with a message that says what is wrong when the folder, the
 * file or its contents are not what the tests were written against.
 *
 * A fresh clone has no corpus: tests build their media with test-support/media.ts, and the few that
 * need the corpus skip visibly with `describe.skipIf(!hasCorpus())(needsCorpus('…'), …)`, so the
 * reason shows in vitest's list of skipped titles. CI has the corpus beside the clone and runs them.
 * TEST_FIXTURES_DIR points the tests at another folder (a path that does not exist simulates a fresh
 * clone). Not imported by production code.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(import.meta.dirname, '..');
export const FIXTURES_DIR = process.env.TEST_FIXTURES_DIR
  ? resolve(process.env.TEST_FIXTURES_DIR)
  : resolve(REPO_ROOT, '../shared/fixtures');

/** Whether the corpus is there (its manifest, at least): tests that need it skip when it is not. */
export function hasCorpus(): boolean {
  return existsSync(join(FIXTURES_DIR, 'manifest.json'));
}

/** In the title of every test that needs the corpus, present or not. */
export const CORPUS_TAG = 'needs the shared corpus';

/**
 * The title of a test or suite that needs the corpus, tagged with CORPUS_TAG. Where the corpus is
 * missing, one line on stderr names what is skipped and why: vitest's default reporter counts
 * skipped tests without naming them.
 */
export function needsCorpus(title: string): string {
  if (!hasCorpus()) console.warn(`skipped, needs the shared corpus (none at ${FIXTURES_DIR}): ${title}`);
  // Tagged either way, so `vitest run -t '${CORPUS_TAG}'` runs exactly these (what CI does beside the corpus).
  return `${title} [${CORPUS_TAG}]`;
}

let sums: Map<string, string> | undefined;
const verified = new Set<string>();

function manifestSums(): Map<string, string> {
  if (sums) return sums;
  if (!existsSync(FIXTURES_DIR)) {
    throw new Error(
      `The shared fixtures folder is missing: expected ${FIXTURES_DIR} (../shared/fixtures from the repo root, or TEST_FIXTURES_DIR). It is optional: a test that needs it skips with hasCorpus(); other tests build media with test-support/media.ts.`,
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
