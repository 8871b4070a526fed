/**
 * engine/decode against the real ffmpeg: media generated here with lavfi sources, the recorded
 * JFK sample (test-support/media.ts), hostile inputs (playlists, lying headers, stalled streams) and process hygiene.
 */

import { execFile } from 'node:child_process';
import { getEventListeners, once } from 'node:events';
import { createReadStream, readdirSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { codeOf } from '../../test-support/errors.ts';
import { ffmpeg, ffmpegChildren } from '../../test-support/ffmpeg.ts';
import { jfkSample } from '../../test-support/media.ts';
import { noiseBytes } from '../../test-support/random.ts';
import { closeServer } from '../../test-support/servers.ts';
import { EngineError } from '../errors.ts';
import { type DecodeOptions, decodeStream, decodeToPcm, SAMPLE_RATE } from './index.ts';
import { stalledStream, toneFrequency } from './testing/media.ts';

let dir: string;
const media = (name: string) => join(dir, name);

/** One codec frame: the largest here is mp3's 1152 samples at 44.1 kHz, about 418 samples at 16 kHz. */
const ONE_FRAME = 420;
const TONE = 'sine=frequency=440:sample_rate=44100:duration=3';
const VIDEO = 'testsrc=duration=3:size=64x48:rate=10';

async function errorOf(p: Promise<unknown>): Promise<EngineError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof EngineError) return err;
    throw err;
  }
  throw new Error('expected the decode to fail');
}

/** Consumes a decode, counting what it yields before it ends or fails. */
async function drain(input: Parameters<typeof decodeStream>[0], opts?: DecodeOptions) {
  let samples = 0;
  let chunks = 0;
  let error: unknown;
  try {
    for await (const chunk of decodeStream(input, opts)) {
      samples += chunk.length;
      chunks++;
    }
  } catch (err) {
    error = err;
  }
  return { samples, chunks, error: error as EngineError | undefined };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'decode-test-'));
  // One ffmpeg per source, writing every file made from it (an output's options are the ones just
  // before it): starting ffmpeg costs more CPU than encoding any of these few seconds.
  const av = (audio: string, video: string, file: string) => ['-shortest', '-c:a', audio, '-c:v', video, media(file)];
  const sines = ['sine=duration=10', 'sine=duration=120', 'sine=duration=1', 'sine=duration=1:sample_rate=8000'];
  await Promise.all([
    ffmpeg(
      ...['-f', 'lavfi', '-i', TONE],
      ...['-ac', '2', media('tone.wav')],
      ...['-c:a', 'libmp3lame', media('tone.mp3')],
      ...['-c:a', 'flac', media('tone.flac')],
      ...['-c:a', 'libopus', media('tone.opus')],
      ...['-c:a', 'libvorbis', media('tone.ogg')],
      // The mp4 muxer's default puts the index (moov) after the media data: the pipe trap.
      ...['-c:a', 'aac', media('tone.m4a')],
      ...['-c:a', 'aac', '-movflags', '+faststart', media('tone-faststart.m4a')],
    ),
    ffmpeg(
      ...['-f', 'lavfi', '-i', TONE, '-f', 'lavfi', '-i', VIDEO],
      ...av('aac', 'libx264', 'tone.mp4'),
      ...av('aac', 'libx264', 'tone.mov'),
      ...av('libopus', 'libvpx', 'tone.webm'),
      ...av('flac', 'libx264', 'tone.mkv'),
    ),
    ffmpeg(
      ...['-f', 'lavfi', '-i', VIDEO],
      ...['-c:v', 'libx264', media('video-only.mp4')],
      ...['-c:v', 'libx264', media('video-only.mkv')],
    ),
    ffmpeg(
      ...sines.flatMap((sine) => ['-f', 'lavfi', '-i', sine]),
      ...['-map', '0', '-c:a', 'flac', media('ten-seconds.flac')],
      ...['-map', '1', '-c:a', 'pcm_s16le', media('two-minutes.wav')],
      ...['-map', '2', '-t', '0', media('header-only.wav')],
      ...['-map', '3', '-c:a', 'flac', media('one-second.flac')],
    ),
    // Long enough (about 300 kB; the trap shows from about 100 kB) that ffmpeg cannot keep the whole
    // file in its read buffer and seek back in it. Small frames: the size is the audio's and the
    // frames', not x264's work.
    ffmpeg(
      ...['-f', 'lavfi', '-i', 'sine=duration=30', '-f', 'lavfi', '-i', 'testsrc=duration=30:size=64x48:rate=10'],
      ...av('aac', 'libx264', 'index-last.mp4'),
    ),
  ]);
  // Written to a pipe, the Matroska muxer cannot go back to fill in the duration: the header says N/A.
  await new Promise<void>((done, fail) => {
    execFile(
      'sh',
      [
        '-c',
        `ffmpeg -hide_banner -loglevel error -f lavfi -i sine=duration=20 -c:a libopus -f matroska pipe:1 > "$0"`,
        media('no-duration.mkv'),
      ],
      (err) => (err ? fail(err) : done()),
    );
  });
  await writeFile(media('empty.bin'), Buffer.alloc(0));
  await writeFile(media('noise.bin'), noiseBytes(64 * 1024));
  await writeFile(media('truncated.wav'), (await readFile(media('tone.wav'))).subarray(0, 30));
  await writeFile(media('truncated.mp4'), (await readFile(media('tone-faststart.m4a'))).subarray(0, 200));
  await writeFile(media('claims-days.flac'), await flacClaimingDays());
}, 120_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** one-second.flac (8 kHz), its STREAMINFO made to claim 2^36 - 1 samples (about 99 days). */
async function flacClaimingDays(): Promise<Buffer> {
  const bytes = await readFile(media('one-second.flac'));
  // 'fLaC', then the 4-byte metadata block header, then STREAMINFO; its bytes 13..17 end with the 36-bit
  // total-samples field.
  const info = bytes.indexOf('fLaC') + 8;
  bytes[info + 13] = bytes[info + 13]! | 0x0f;
  bytes.fill(0xff, info + 14, info + 18);
  return bytes;
}

describe('decodes real media to 16 kHz mono f32', () => {
  const formats = ['wav', 'mp3', 'flac', 'opus', 'ogg', 'm4a', 'mp4', 'mov', 'webm', 'mkv'];
  for (const ext of formats) {
    for (const via of ['stream', 'path'] as const) {
      it(`${ext} from a ${via}`, async () => {
        const file = media(`tone.${ext}`);
        const pcm = await decodeToPcm(via === 'stream' ? createReadStream(file) : { path: file }, { tmpDir: dir });
        expect(Math.abs(pcm.length - 3 * SAMPLE_RATE)).toBeLessThanOrEqual(ONE_FRAME);
        // The tone survives: right pitch (so the sample rate is right) and the level lavfi's sine has (1/8).
        expect(toneFrequency(pcm, SAMPLE_RATE)).toBeCloseTo(440, -1);
        const rms = Math.sqrt(pcm.reduce((sum, v) => sum + v * v, 0) / pcm.length);
        expect(rms).toBeGreaterThan(0.07);
        expect(rms).toBeLessThan(0.1);
      });
    }
  }

  it('decodes the recorded JFK sample in wav, mp3 and flac to 11 s each', async () => {
    const wav = await decodeToPcm({ path: await jfkSample('wav') });
    const flac = await decodeToPcm(createReadStream(await jfkSample('flac')));
    const mp3 = await decodeToPcm(createReadStream(await jfkSample('mp3')));
    expect(wav.length).toBe(176_000);
    expect(flac.length).toBe(176_000);
    expect(Math.abs(mp3.length - 176_000)).toBeLessThanOrEqual(ONE_FRAME);
    // The wav is 16 kHz s16: decoding is exact up to the s16 → f32 scale.
    const raw = await readFile(await jfkSample('wav'));
    const dataAt = raw.indexOf('data') + 8;
    for (const i of [1000, 50_000, 123_456]) expect(wav[i]).toBeCloseTo(raw.readInt16LE(dataAt + 2 * i) / 32768, 6);
  });

  it('decodes a WAV written to a pipe (unknown sizes, a partial last packet) to its last sample', async () => {
    // ffmpeg's own WAV muxer on a pipe writes 0xFFFFFFFF sizes; 40 s of s16 ends mid-packet, which ffmpeg
    // reports as a "corrupt input packet" — a legitimate stream that must decode in full.
    const lavfi = ['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=16000', '-t', '40', '-f', 'wav', 'pipe:1'];
    const wav = await new Promise<Buffer>((ok, fail) =>
      execFile(
        'ffmpeg',
        ['-hide_banner', '-loglevel', 'error', ...lavfi],
        { encoding: 'buffer', maxBuffer: 8 << 20 },
        (e, out) => (e ? fail(e) : ok(out)),
      ),
    );
    expect(wav.readUInt32LE(4)).toBe(0xffffffff);
    const pcm = await decodeToPcm(Readable.from([wav]));
    expect(pcm.length).toBe(40 * SAMPLE_RATE);
  });

  it('yields chunks of exactly chunkSamples, the last one shorter, and reports progress', async () => {
    const sizes: number[] = [];
    const progress: number[] = [];
    const stream = decodeStream(
      { path: media('tone.flac') },
      { chunkSamples: 5000, onProgress: (p) => progress.push(p.fraction ?? Number.NaN) },
    );
    for await (const chunk of stream) sizes.push(chunk.length);
    expect(sizes.slice(0, -1).every((n) => n === 5000)).toBe(true);
    expect(sizes.at(-1)).toBe(48_000 - 5000 * (sizes.length - 1));
    expect(progress.length).toBe(sizes.length);
    expect(progress.at(-1)).toBeCloseTo(1, 2);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!).toBeGreaterThan(progress[i - 1]!);
  });
});

describe('bad input gets a stable code', () => {
  for (const via of ['stream', 'path'] as const) {
    const open = (name: string) => (via === 'stream' ? createReadStream(media(name)) : { path: media(name) });

    it(`video without audio → NO_AUDIO_STREAM (${via})`, async () => {
      expect(await codeOf(decodeToPcm(open('video-only.mp4')))).toBe('NO_AUDIO_STREAM');
      expect(await codeOf(decodeToPcm(open('video-only.mkv')))).toBe('NO_AUDIO_STREAM');
    });

    it(`random bytes and truncated headers → DECODE_FAILED (${via})`, async () => {
      expect(await codeOf(decodeToPcm(open('noise.bin')))).toBe('DECODE_FAILED');
      expect(await codeOf(decodeToPcm(open('truncated.wav')))).toBe('DECODE_FAILED');
      expect(await codeOf(decodeToPcm(open('truncated.mp4'), { tmpDir: dir }))).toBe('DECODE_FAILED');
    });

    it(`0 bytes in, or 0 samples out → EMPTY_MEDIA (${via})`, async () => {
      expect(await codeOf(decodeToPcm(open('empty.bin')))).toBe('EMPTY_MEDIA');
      expect(await codeOf(decodeToPcm(open('header-only.wav')))).toBe('EMPTY_MEDIA');
    });
  }

  it('a missing file or a folder → SOURCE_NOT_FOUND', async () => {
    expect(await codeOf(decodeToPcm({ path: media('nope.wav') }))).toBe('SOURCE_NOT_FOUND');
    expect(await codeOf(decodeToPcm({ path: dir }))).toBe('SOURCE_NOT_FOUND');
  });

  it('a missing ffmpeg binary → FFMPEG_NOT_FOUND', async () => {
    const opts = { ffmpegPath: join(dir, 'no-such-ffmpeg') };
    expect(await codeOf(decodeToPcm({ path: media('tone.wav') }, opts))).toBe('FFMPEG_NOT_FOUND');
    expect(await codeOf(decodeToPcm(createReadStream(media('tone.wav')), opts))).toBe('FFMPEG_NOT_FOUND');
  });

  it('options out of range → INVALID_OPTIONS', async () => {
    expect(await codeOf(decodeToPcm({ path: media('tone.wav') }, { chunkSamples: 0 }))).toBe('INVALID_OPTIONS');
    expect(await codeOf(decodeToPcm({ path: media('tone.wav') }, { maxDurationSec: -1 }))).toBe('INVALID_OPTIONS');
    const noTmp = { tmpDir: join(dir, 'no-such-folder') };
    expect(await codeOf(decodeToPcm(createReadStream(media('index-last.mp4')), noTmp))).toBe('INVALID_OPTIONS');
    expect(await codeOf(decodeToPcm({ path: media('tone.wav') }, { ffmpegPath: 'ffm\0peg' }))).toBe('FFMPEG_NOT_FOUND');
  });

  it('a text-mode stream is refused rather than decoded as garbage', async () => {
    const stream = createReadStream(media('tone.wav'), { encoding: 'latin1' });
    expect(await codeOf(decodeToPcm(stream))).toBe('INVALID_OPTIONS');
  });

  it("an input stream's own failure surfaces as itself, not as a decode error", async () => {
    const head = (await readFile(media('tone.wav'))).subarray(0, 100_000);
    const failing = (err: Error) =>
      new Readable({
        read() {
          this.push(head);
          this.destroy(err);
        },
      });
    const timeout = new EngineError('SOURCE_TIMEOUT', 'origin went quiet');
    expect(await errorOf(decodeToPcm(failing(timeout)))).toBe(timeout);
    expect(await codeOf(decodeToPcm(failing(new Error('socket hang up'))))).toBe('SOURCE_UNREACHABLE');
    expect(await ffmpegChildren()).toEqual([]);
  });

  it('a stream over maxInputBytes → SOURCE_TOO_LARGE, piped or spooled', async () => {
    const piped = await errorOf(decodeToPcm(createReadStream(media('two-minutes.wav')), { maxInputBytes: 100_000 }));
    expect(piped.code).toBe('SOURCE_TOO_LARGE');
    const spoolDir = await mkdtemp(join(dir, 'spool-'));
    const spooled = await errorOf(
      decodeToPcm(createReadStream(media('index-last.mp4')), { maxInputBytes: 50_000, tmpDir: spoolDir }),
    );
    expect(spooled.code).toBe('SOURCE_TOO_LARGE');
    expect(await readdir(spoolDir)).toEqual([]);
    expect(await ffmpegChildren()).toEqual([]);
  });
});

describe('MP4 with its index at the end, fed through a pipe', () => {
  it('really is the trap: plain ffmpeg on a pipe exits 0 with 0 bytes', async () => {
    const { code, bytes } = await new Promise<{ code: number | null; bytes: number }>((done) => {
      const child = execFile(
        'ffmpeg',
        ['-hide_banner', '-loglevel', 'error', '-i', 'pipe:0', '-vn', '-f', 'f32le', 'pipe:1'],
        { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 },
        (_err, stdout) => done({ code: child.exitCode, bytes: stdout.length }),
      );
      createReadStream(media('index-last.mp4')).pipe(child.stdin!);
    });
    expect({ code, bytes }).toEqual({ code: 0, bytes: 0 });
  });

  it('is spooled to a private temp file, decoded fully, and the file is removed', async () => {
    const spoolDir = await mkdtemp(join(dir, 'spool-'));
    const seenDuringDecode: string[] = [];
    const pcm = await decodeToPcm(createReadStream(media('index-last.mp4')), {
      tmpDir: spoolDir,
      onProgress: () => {
        if (seenDuringDecode.length > 0) return;
        for (const sub of readdirSync(spoolDir)) {
          for (const f of readdirSync(join(spoolDir, sub))) seenDuringDecode.push(`${sub}/${f}`);
        }
      },
    });
    expect(Math.abs(pcm.length - 30 * SAMPLE_RATE)).toBeLessThanOrEqual(ONE_FRAME);
    expect(seenDuringDecode).toEqual([expect.stringMatching(/^decode-\w+\/input$/)]);
    expect(await readdir(spoolDir)).toEqual([]);
  });

  it('a faststart MP4 streams without a spool', async () => {
    const spoolDir = await mkdtemp(join(dir, 'spool-'));
    let spooled = false;
    const pcm = await decodeToPcm(createReadStream(media('tone-faststart.m4a')), {
      tmpDir: spoolDir,
      onProgress: () => {
        spooled ||= readdirSync(spoolDir).length > 0;
      },
    });
    expect(Math.abs(pcm.length - 3 * SAMPLE_RATE)).toBeLessThanOrEqual(ONE_FRAME);
    expect(spooled).toBe(false);
  });

  it('removes the spool when the input stalls and the decode times out', async () => {
    const spoolDir = await mkdtemp(join(dir, 'spool-'));
    const head = (await readFile(media('index-last.mp4'))).subarray(0, 4096);
    const stream = stalledStream(head);
    const err = await errorOf(decodeToPcm(stream, { tmpDir: spoolDir, timeoutMs: 300 }));
    expect(err.code).toBe('DECODE_TIMEOUT');
    expect(stream.destroyedByDecoder()).toBe(true);
    expect(await readdir(spoolDir)).toEqual([]);
  });
});

describe('duration cap', () => {
  it('refuses media whose header claims more than the cap, before any audio is handed out', async () => {
    for (const input of [
      () => createReadStream(media('ten-seconds.flac')),
      () => ({ path: media('ten-seconds.flac') }),
    ]) {
      const { chunks, error } = await drain(input(), { maxDurationSec: 5 });
      expect(error?.code).toBe('MEDIA_DURATION_EXCEEDED');
      expect(chunks).toBe(0);
    }
  });

  it('refuses a tiny file whose header claims days, without decoding it', async () => {
    const { chunks, error } = await drain(createReadStream(media('claims-days.flac')));
    expect(error?.code).toBe('MEDIA_DURATION_EXCEEDED');
    expect(error?.details.claimedSec).toBeGreaterThan(86_400);
    expect(chunks).toBe(0);
  });

  it('counts samples when the header gives no duration, and stops past the cap', async () => {
    const { samples, error } = await drain(createReadStream(media('no-duration.mkv')), { maxDurationSec: 5 });
    expect(error?.code).toBe('MEDIA_DURATION_EXCEEDED');
    expect(samples).toBeLessThanOrEqual(5.5 * SAMPLE_RATE);
    expect(samples).toBeGreaterThan(4 * SAMPLE_RATE);
    expect(await ffmpegChildren()).toEqual([]);
    // The same file under a cap it fits decodes whole.
    expect((await decodeToPcm(createReadStream(media('no-duration.mkv')), { maxDurationSec: 30 })).length).toBeCloseTo(
      20 * SAMPLE_RATE,
      -3,
    );
  });
});

describe('playlists and indirection are refused and never followed', () => {
  let server: ReturnType<typeof createServer>;
  let hits = 0;
  let base = '';

  beforeAll(async () => {
    server = createServer((_req, res) => {
      hits++;
      res.end('x');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => closeServer(server));

  const playlist = (segments = [`${base}/segment0.ts`, 'file:///etc/passwd', 'http://169.254.169.254/latest/']) =>
    ['#EXTM3U', '#EXT-X-TARGETDURATION:10', ...segments.flatMap((s) => ['#EXTINF:10,', s]), '#EXT-X-ENDLIST', ''].join(
      '\n',
    );

  it('the probe works: unhardened ffmpeg does fetch a segment from this playlist', async () => {
    // Only the loopback segment: ffmpeg 5.1.9 refuses a whole playlist that names a file:// segment.
    const path = join(dir, 'control.m3u8');
    await writeFile(path, playlist([`${base}/segment0.ts`]));
    hits = 0;
    await new Promise<void>((done) => {
      // A local playlist may name only local files unless http is allowed; allow it to show the probe bites.
      const args = ['-hide_banner', '-nostdin', '-protocol_whitelist', 'file,http,tcp', '-i', path, '-f', 'null', '-'];
      execFile('ffmpeg', args, { timeout: 20_000 }, () => done());
    });
    expect(hits).toBeGreaterThan(0);
  });

  for (const via of ['stream', 'path'] as const) {
    it(`an HLS playlist is refused (${via})`, async () => {
      for (const segments of [undefined, [`${base}/segment0.ts`]]) {
        const path = join(dir, `evil-${via}.m3u8`);
        await writeFile(path, playlist(segments));
        hits = 0;
        const err = await errorOf(decodeToPcm(via === 'stream' ? createReadStream(path) : { path }));
        expect(err.code).toBe('DECODE_FAILED');
        expect(err.details.reason).toBe('format_not_allowed');
        expect(hits).toBe(0);
      }
    });

    it(`an ffconcat list is refused (${via})`, async () => {
      const path = join(dir, `evil-${via}.ffconcat`);
      await writeFile(path, `ffconcat version 1.0\nfile ${media('tone.wav')}\nfile ${base}/x.wav\n`);
      hits = 0;
      const err = await errorOf(decodeToPcm(via === 'stream' ? createReadStream(path) : { path }));
      expect(err.code).toBe('DECODE_FAILED');
      expect(err.details.reason).toBe('format_not_allowed');
      expect(hits).toBe(0);
    });
  }
});

describe('timeouts, aborts and the child process', () => {
  it('times out a stalled input: DECODE_TIMEOUT, child killed, input destroyed', async () => {
    const head = (await readFile(media('tone.wav'))).subarray(0, 4096);
    const stream = stalledStream(head);
    const decoding = drain(stream, { timeoutMs: 400 });
    await stream.stalled; // the decoder has fed the head to ffmpeg and waits for more
    expect((await ffmpegChildren()).length).toBe(1);
    const { error } = await decoding;
    expect(error?.code).toBe('DECODE_TIMEOUT');
    expect(stream.destroyedByDecoder()).toBe(true);
    expect(await ffmpegChildren()).toEqual([]);
  });

  it('does not count the time a slow consumer holds a chunk (fake clock)', async () => {
    // The decoder's clock is faked; ffmpeg and the pipes run for real. Holding each chunk for 800
    // fake ms (2.4 s over three chunks) would pass the 2 s limit if holding counted.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      let chunks = 0;
      for await (const _ of decodeStream({ path: media('tone.flac') }, { timeoutMs: 2000 })) {
        chunks++;
        vi.advanceTimersByTime(800);
      }
      expect(chunks).toBe(3);
    } finally {
      vi.useRealTimers();
    }
  });

  it('aborts mid-stream: ABORTED, child gone, signal listener removed', async () => {
    const ac = new AbortController();
    let error: unknown;
    let chunks = 0;
    try {
      for await (const _ of decodeStream(createReadStream(media('two-minutes.wav')), { signal: ac.signal })) {
        chunks++;
        if (chunks === 1) {
          expect((await ffmpegChildren()).length).toBe(1);
          ac.abort(new Error('client went away'));
        }
      }
    } catch (err) {
      error = err;
    }
    expect((error as EngineError).code).toBe('ABORTED');
    expect(chunks).toBe(1);
    expect(await ffmpegChildren()).toEqual([]);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });

  it('aborts a decode waiting on a stalled input', async () => {
    const ac = new AbortController();
    const stream = stalledStream((await readFile(media('tone.wav'))).subarray(0, 4096));
    const decoding = drain(stream, { signal: ac.signal });
    await stream.stalled;
    ac.abort();
    expect((await decoding).error?.code).toBe('ABORTED');
    expect(stream.destroyedByDecoder()).toBe(true);
    expect(await ffmpegChildren()).toEqual([]);
  });

  it('an already-aborted signal starts nothing', async () => {
    const ac = new AbortController();
    ac.abort();
    expect(await codeOf(decodeToPcm({ path: media('tone.wav') }, { signal: ac.signal }))).toBe('ABORTED');
  });

  it('removes its abort listener after a successful decode', async () => {
    const ac = new AbortController();
    await decodeToPcm({ path: media('tone.wav') }, { signal: ac.signal });
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });

  it('applies backpressure: a consumer that holds a chunk holds ffmpeg', async () => {
    // 120 s of audio decodes in well under a second when nobody waits; while the consumer holds the first
    // chunk, ffmpeg must still be alive, blocked on a full pipe.
    const stream = decodeStream({ path: media('two-minutes.wav') });
    const first = await stream.next();
    expect(first.done).toBe(false);
    await sleep(1500);
    expect((await ffmpegChildren()).length).toBe(1);
    let rest = 0;
    for await (const chunk of stream) rest += chunk.length;
    expect((first.value as Float32Array).length + rest).toBe(120 * SAMPLE_RATE);
    expect(await ffmpegChildren()).toEqual([]);
  });

  it('a consumer that stops early leaves no child and no open input', async () => {
    const input = createReadStream(media('two-minutes.wav'));
    for await (const _ of decodeStream(input)) break;
    expect(await ffmpegChildren()).toEqual([]);
    expect(input.destroyed).toBe(true);
  });

  it('runs decodes side by side, each with its own child', async () => {
    const files = ['tone.wav', 'tone.mp3', 'tone.webm', 'index-last.mp4', 'tone.ogg', 'two-minutes.wav'];
    const lengths = await Promise.all(files.map((f) => decodeToPcm(createReadStream(media(f)), { tmpDir: dir })));
    expect(lengths.map((p) => Math.round(p.length / SAMPLE_RATE))).toEqual([3, 3, 3, 30, 3, 120]);
    expect(await ffmpegChildren()).toEqual([]);
  });

  it('leaves no ffmpeg child after any failure', async () => {
    await codeOf(decodeToPcm(createReadStream(media('noise.bin'))));
    await codeOf(decodeToPcm({ path: media('video-only.mp4') }));
    await codeOf(decodeToPcm(createReadStream(media('claims-days.flac'))));
    expect(await ffmpegChildren()).toEqual([]);
  });
});
