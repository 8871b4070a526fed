/**
 * Building test media leaves nothing outside .cache/test-media. espeak-ng loads a PulseAudio client
 * (through libpcaudio) that, left alone, makes a `pulse-*` folder in TMPDIR and a link to it in
 * ~/.config/pulse even when it only writes a file, and removes neither: on a fresh machine every
 * run of the suite left that folder behind (the fresh-clone check fails on it). The speech is built
 * in a child process whose TMPDIR and HOME are empty folders of this test, which must stay empty.
 */

import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../test-support/fixtures.ts';

const run = promisify(execFile);

describe('test media', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'test-media-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('rendered speech leaves no folder in TMPDIR or HOME', async () => {
    const [tmp, home] = [join(dir, 'tmp'), join(dir, 'home')];
    await Promise.all([tmp, home].map((d) => run('mkdir', ['-p', d])));
    // A text of its own, so the file is rendered now rather than found in the cache.
    const text = `nothing is left behind ${process.pid} ${Date.now()}`;
    const script = `const m = await import('./test-support/media.ts'); console.log(await m.speech(${JSON.stringify(text)}));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', TMPDIR: tmp, HOME: home },
    });
    const made = stdout.trim();
    expect(made.startsWith(join(REPO_ROOT, '.cache/test-media/'))).toBe(true);
    expect(await readdir(tmp)).toEqual([]);
    expect(await readdir(home)).toEqual([]);
    expect((await readdir(join(REPO_ROOT, '.cache/test-media'))).filter((f) => f.startsWith('.pulse-'))).toEqual([]);
    await rm(made, { force: true });
  });
});
