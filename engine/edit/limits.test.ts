/**
 * A render's bounds against the real ffmpeg, on the attacks' media: headers that claim 14,000 s of a
 * 1 s file, too many inputs, frames too large (the 8192×8192 clip, refused before ffmpeg runs), an
 * output past its byte cap, and the child's CPU priority. Every file here is short (64×64, 1280×720 for
 * five frames, one 8192² frame); peak memory at the caps is measured in limits.long.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ffmpeg } from '../../test-support/ffmpeg.ts';
import { keepWithinContent, renderLimits } from './limits.ts';
import { probeEditInput } from './probe.ts';
import { renderEdit } from './render.ts';
import { CLAIMED_SEC, makeDoctoredM4a, makeDoctoredSilentClip, makeHdClip } from './testing/attack-media.ts';

let dir: string;
let hd: string;
let silent: string;
let m4a: string;

/** What the container's header says, as any reader that trusts it would see it. */
const headerDuration = (path: string) =>
  Number(
    execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', path])
      .toString()
      .trim(),
  );

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edit-limits-'));
  hd = join(dir, 'hd.mp4');
  silent = join(dir, 'silent.mp4');
  m4a = join(dir, 'tone.m4a');
  await Promise.all([makeHdClip(hd), makeDoctoredSilentClip(silent), makeDoctoredM4a(m4a)]);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('duration from packets, not headers', () => {
  it('measures the real content of files whose headers claim 14,000 s', async () => {
    expect(headerDuration(silent)).toBe(CLAIMED_SEC);
    expect(headerDuration(m4a)).toBe(CLAIMED_SEC);
    expect((await readFile(m4a)).length).toBeLessThan(10_000);
    const s = await probeEditInput(silent, {});
    expect(s.audio).toBeUndefined();
    expect(s.duration).toBeCloseTo(1, 2);
    const a = await probeEditInput(m4a, {});
    expect(a.video).toBeUndefined();
    expect(a.duration).toBeGreaterThan(0.99);
    expect(a.duration).toBeLessThan(1.03);
    expect((await probeEditInput(hd, {})).duration).toBeCloseTo(0.2, 1);
  });

  it('renders an HD clip and the "silent" clip joined: frames only for their real 1.2 s', async () => {
    const out = join(dir, 'joined.mp4');
    const inputs = [
      { path: hd, keep: [{ start: 0, end: 0.2 }] },
      // What a service holding the header's duration asks for: everything up to 14,000 s.
      { path: silent, keep: [{ start: 0, end: CLAIMED_SEC }] },
    ];
    await expect(renderEdit({ inputs, output: out })).rejects.toMatchObject({ code: 'EDIT_INVALID' });
    const r = await renderEdit({ inputs, output: out, clipToContent: true });
    expect(r.duration).toBeCloseTo(1.2, 1);
    expect(r.inputKeep[1]).toEqual([{ start: 0, end: 1 }]);
    expect(r.hasVideo && r.hasAudio).toBe(true);
    expect(headerDuration(out)).toBeLessThan(1.3);
  });

  it('renders the doctored M4A as its 1 s, in its own codec', async () => {
    const out = join(dir, 'tone-cut.m4a');
    const r = await renderEdit({
      input: m4a,
      output: out,
      keep: [{ start: 0, end: CLAIMED_SEC }],
      clipToContent: true,
    });
    expect(r).toMatchObject({ hasVideo: false, extension: 'm4a' });
    expect(r.duration).toBeLessThan(1.05);
    expect(headerDuration(out)).toBeLessThan(1.1);
  });

  it('clips ranges to the content only when asked', () => {
    expect(keepWithinContent([{ start: 0, end: 5 }], 1, true)).toEqual([{ start: 0, end: 1 }]);
    expect(keepWithinContent([{ start: 2, end: 5 }], 1, true)).toEqual([]);
    expect(() => keepWithinContent([{ start: 0, end: 5 }], 1, false)).toThrow(
      expect.objectContaining({ code: 'EDIT_INVALID' }),
    );
    // Within the slack a stored duration may differ by, the end is simply the content's.
    expect(keepWithinContent([{ start: 0, end: 1.02 }], 1, false)).toEqual([{ start: 0, end: 1 }]);
  });
});

describe('bounds', () => {
  it('refuses more inputs than the cap before probing any (RENDER_LIMIT_EXCEEDED)', async () => {
    const inputs = Array.from({ length: 21 }, () => ({
      path: join(dir, 'never-read.mp4'),
      keep: [{ start: 0, end: 1 }],
    }));
    await expect(renderEdit({ inputs, output: join(dir, 'x.mp4') })).rejects.toMatchObject({
      code: 'RENDER_LIMIT_EXCEEDED',
      details: { limit: 'inputs', max: 20, got: 21 },
    });
  });

  it('refuses frames over the pixel cap (RENDER_LIMIT_EXCEEDED)', async () => {
    await expect(
      renderEdit({
        input: hd,
        keep: [{ start: 0, end: 0.2 }],
        output: join(dir, 'x.mp4'),
        limits: { maxInputPixels: 1280 * 720 - 1 },
      }),
    ).rejects.toMatchObject({
      code: 'RENDER_LIMIT_EXCEEDED',
      details: { limit: 'inputPixels', index: 0, width: 1280, height: 720 },
    });
    expect(renderLimits().maxInputPixels).toBe(3840 * 2160);
  });

  it('refuses the 8192×8192 clip before ffmpeg decodes a frame of it', async () => {
    // One frame: the attack held ffmpeg at 7.4 GB with 0.1 s of it.
    const huge = join(dir, 'huge.mp4');
    // biome-ignore format: flag/value pairs read best one pair per line
    await ffmpeg(
      '-f', 'lavfi', '-i', 'color=c=black:s=8192x8192:r=25:d=0.04',
      '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', huge,
    );
    const fake = join(dir, 'never-run.sh');
    await writeFile(fake, `#!/bin/sh\ntouch '${join(dir, 'ffmpeg-ran')}'\nexit 1\n`);
    await chmod(fake, 0o755);
    await expect(
      renderEdit({ input: huge, keep: [{ start: 0, end: 0.04 }], output: join(dir, 'x.mp4'), ffmpegPath: fake }),
    ).rejects.toMatchObject({
      code: 'RENDER_LIMIT_EXCEEDED',
      details: { limit: 'inputPixels', max: 3840 * 2160, width: 8192, height: 8192 },
    });
    await expect(readFile(join(dir, 'ffmpeg-ran'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('stops ffmpeg at the output byte cap and fails, leaving no file (-fs)', async () => {
    const out = join(dir, 'capped.mp4');
    await expect(
      renderEdit({ input: hd, keep: [{ start: 0, end: 0.2 }], output: out, limits: { maxOutputBytes: 8_000 } }),
    ).rejects.toMatchObject({ code: 'RENDER_LIMIT_EXCEEDED', details: { limit: 'outputBytes', max: 8_000 } });
    expect((await readdir(dir)).filter((f) => f.includes('capped'))).toEqual([]);
  });

  it('checks its own settings (INVALID_OPTIONS)', () => {
    expect(() => renderLimits({ maxInputs: 0 })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
    expect(() => renderLimits({ niceness: 20 })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
  });

  it('runs ffmpeg niced, with bounded decoder and encoder threads and the size cap', async () => {
    // A stand-in ffmpeg (the real one exits too soon to be looked at): it records its own nice value,
    // read from /proc once the parent has had time to lower it, and its arguments, then fails.
    const seen = join(dir, 'seen.txt');
    const fake = join(dir, 'fake-ffmpeg.sh');
    await writeFile(
      fake,
      `#!/bin/sh\nsleep 0.5\ncut -d' ' -f19 /proc/$$/stat > '${seen}'\necho "$@" >> '${seen}'\nexit 1\n`,
    );
    await chmod(fake, 0o755);
    await expect(
      renderEdit({ input: hd, keep: [{ start: 0, end: 0.2 }], output: join(dir, 'y.mp4'), ffmpegPath: fake }),
    ).rejects.toMatchObject({ code: 'RENDER_FAILED' });
    const [nice, args] = (await readFile(seen, 'utf8')).trim().split('\n');
    expect(Number(nice)).toBeGreaterThanOrEqual(10);
    expect(args).toContain('-threads 2 -protocol_whitelist file');
    expect(args).toContain(`-fs ${8 * 1024 ** 3}`);
    expect(args).toContain('-threads 4');
  });
});
