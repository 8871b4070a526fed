/**
 * Test code reaches the shared fixtures, generated test media and the test services one way each:
 * the optional corpus through test-support/fixtures.ts (every file checked against the fixtures'
 * manifest), media built from what ships (the JFK sample inside nodejs-whisper, espeak-ng speech)
 * through test-support/media.ts (cached by recipe, safe under parallel forks), Redis and PostgreSQL
 * through the variables of test-support/services.ts. This scans the tests, their helpers and the
 * benchmarks for any other way in.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');

function sources(): Array<{ rel: string; text: string }> {
  const out: Array<{ rel: string; text: string }> = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        if (!['node_modules', 'results', 'cache', '.cache'].includes(e.name)) walk(p);
      } else if (e.name.endsWith('.ts')) {
        out.push({ rel: relative(ROOT, p), text: readFileSync(p, 'utf8') });
      }
    }
  };
  for (const d of ['engine', 'api', 'workers', 'models', 'cli', 'scripts', 'benchmarks', 'test-support']) {
    walk(join(ROOT, d));
  }
  return out;
}

/** Code only: comments may well name the folder. */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');

const files = sources();

describe('test hygiene', () => {
  it('reaches ../shared/fixtures only through the checked resolver', () => {
    const offenders = files
      .filter((f) => f.rel !== 'test-support/fixtures.ts' && f.rel !== 'scripts/test-hygiene.test.ts')
      .filter((f) => /['"`][^'"`\n]*shared\/fixtures|\bFIXTURES_DIR\b/.test(code(f.text)))
      .map((f) => f.rel);
    expect(offenders).toEqual([]);
  });

  it('builds media from shipped samples and espeak-ng only through test-support/media.ts', () => {
    const offenders = files
      .filter((f) => f.rel !== 'test-support/media.ts' && f.rel !== 'scripts/test-hygiene.test.ts')
      .filter((f) => /['"`][^'"`\n]*(espeak|whisper\.cpp\/samples)/.test(code(f.text)))
      .map((f) => f.rel);
    expect(offenders).toEqual([]);
  });

  it('takes the test services from one place, under one name each', () => {
    const offenders = files
      .filter((f) => f.rel !== 'test-support/services.ts' && f.rel !== 'scripts/test-hygiene.test.ts')
      .filter((f) => /process\.env\.\w*(REDIS|DATABASE|POSTGRES|PG)\w*/.test(code(f.text)))
      .filter((f) => /\.test\.ts$|\/testing\/|^test-support\//.test(f.rel))
      .map((f) => f.rel);
    expect(offenders).toEqual([]);
  });

  it('keeps test helpers in one layout: a testing/ folder beside the code, or the root test-support/', () => {
    // Test files are *.test.ts; a helper is any other file a test imports. The old layouts were
    // test-support.ts, test-helpers.ts and test-media.ts files beside the code.
    const offenders = files
      .map((f) => f.rel)
      .filter((rel) => /^(engine|api|workers|models|cli|benchmarks)\//.test(rel))
      .filter((rel) => /(^|\/)test-[\w-]*(\/|\.ts$)/.test(rel));
    expect(offenders).toEqual([]);
  });

  it('has one median, one seeded generator and one reader of PCM through ffmpeg', () => {
    const onlyIn: Array<[RegExp, string[]]> = [
      [/\bfunction\s+median\b|\b(const|let)\s+median\s*=/, ['test-support/stats.ts']],
      // mulberry32's increment; the classic LCG's multiplier
      [/0x6d2b79f5|\b1103515245\b/, ['engine/random.ts']],
      // the engine's own decoder, and the test that shows plain ffmpeg's trap on a pipe
      [/['"]f32le['"]/, ['test-support/ffmpeg.ts', 'engine/decode/args.ts', 'engine/decode/decode.test.ts']],
    ];
    const offenders = onlyIn.flatMap(([re, allowed]) =>
      files
        .filter((f) => !allowed.includes(f.rel) && f.rel !== 'scripts/test-hygiene.test.ts')
        .filter((f) => re.test(code(f.text)))
        .map((f) => `${re.source}: ${f.rel}`),
    );
    expect(offenders).toEqual([]);
  });

  it('the scan sees the files it polices', () => {
    const rels = files.map((f) => f.rel);
    expect(rels).toContain('test-support/fixtures.ts');
    expect(rels).toContain('test-support/media.ts');
    expect(rels).toContain('benchmarks/vad.ts');
    expect(rels).toContain('workers/testing/redis.ts');
    expect(rels).toContain('test-support/stats.ts');
    expect(rels).toContain('engine/random.ts');
  });
});
