/**
 * The `transcribe` command as a user runs it: a real child process over real media,
 * the real addon and the synthetic models, output checked by a real WebVTT parser.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebVTTParser } from 'webvtt-parser';
import { resolveModel } from '../models/index.ts';
import { ffmpeg } from '../test-support/ffmpeg.ts';
import { fixture, hasCorpus, needsCorpus } from '../test-support/fixtures.ts';
import { jfkSample, longSpeech } from '../test-support/media.ts';
import { batchedAndAlone, type CliResult, runCli } from './testing/run.ts';

const ROOT = resolve(import.meta.dirname, '..');
const JFK = { wav: await jfkSample('wav'), mp3: await jfkSample('mp3'), flac: await jfkSample('flac') };

/** The transcribe command as a user runs it (cli/testing/run.ts). */
const transcribe = (args: string[], timeout?: number): Promise<CliResult> => runCli('transcribe', args, timeout);

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cli-test-'));
  // Generated once, before the children race for it. synthetic-micro throughout: what is tested is
  // the command (its flags, output, exits), batching's and the self-check's numerics are engine/asr's.
  await resolveModel('synthetic-micro');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('transcribe CLI', () => {
  it('--self-check --model synthetic-micro --flash-attn --format json: the verdict as JSON, 4 windows wide, exit 0', async () => {
    const r = await transcribe(['--self-check', '--model', 'synthetic-micro', '--flash-attn', '--format', 'json']);
    expect(r.stderr).toBe('');
    const v = JSON.parse(r.stdout);
    // The default batch of 4: four canary windows, all in one decoder step and one encoder graph.
    expect(v).toMatchObject({
      status: 'verified',
      backend: 'cpu',
      batchSize: 4,
      widestStep: 4,
      widestEncode: 4,
      stepLimit: 4,
      encodeLimit: 4,
      model: 'synthetic-micro',
      flashAttn: true,
    });
    expect(v.textTokens).toHaveLength(4);
    expect(r.code).toBe(0);
  }, 300_000);

  it("npx transcribe --help: usage on stdout and no npm warning about the project's own config", async () => {
    const r = await new Promise<CliResult>((done) => {
      execFile('npm', ['exec', '--offline', '--', 'transcribe', '--help'], { cwd: ROOT }, (err, stdout, stderr) => {
        done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      });
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^usage: transcribe <file-or-url>/);
    expect(r.stderr).not.toMatch(/Unknown project config/);
  });

  it('--batch-size 8 gives the same JSON as --batch-size 1 on windows cut by VAD', async () => {
    // 45 s: two windows or more, with flash attention (cli/transcribe.long.test.ts runs two minutes
    // on the CPU's default path, without).
    const { batched, alone } = await batchedAndAlone(await longSpeech(45), { flashAttn: true });
    expect(batched.code, batched.stderr).toBe(0);
    expect(alone.code, alone.stderr).toBe(0);
    const json = JSON.parse(batched.stdout) as { duration: number; segments: unknown[] };
    expect(json.duration).toBeGreaterThan(40);
    expect(json.segments.length).toBeGreaterThan(1);
    expect(batched.stdout).toBe(alone.stdout);
  }, 300_000);

  it('prints a WebVTT document a real parser accepts', async () => {
    const r = await transcribe([JFK.mp3, '--model', 'synthetic-micro', '--format', 'vtt', '--flash-attn']);
    expect(r.stderr).toBe(''); // no progress bar on a pipe
    expect(r.code).toBe(0);
    const parsed = new WebVTTParser().parse(r.stdout, 'metadata');
    expect(parsed.errors).toEqual([]);
    expect(parsed.cues.length).toBeGreaterThan(0);
    for (const cue of parsed.cues) {
      expect(cue.endTime).toBeGreaterThan(cue.startTime);
      expect(cue.endTime).toBeLessThanOrEqual(11.1);
    }
  });

  it('--format json gives segments with words, within the audio', async () => {
    const r = await transcribe([JFK.wav, '--model', 'synthetic-micro', '--format', 'json', '--flash-attn']);
    expect(r.code).toBe(0);
    const t = JSON.parse(r.stdout);
    expect(t.duration).toBeCloseTo(11, 0);
    expect(typeof t.language).toBe('string');
    expect(t.segments.length).toBeGreaterThan(0);
    for (const s of t.segments) {
      expect(s.start).toBeLessThan(s.end);
      expect(s.end).toBeLessThanOrEqual(t.duration + 1e-6);
      expect(s.words.length).toBeGreaterThan(0);
      for (const w of s.words) {
        expect(w).toMatchObject({ start: expect.any(Number), end: expect.any(Number), text: expect.any(String) });
        expect(w.p).toBeGreaterThanOrEqual(0);
        expect(w.p).toBeLessThanOrEqual(1);
      }
    }
  });

  it('--out writes the file atomically and --no-word-timestamps drops words', async () => {
    const out = join(dir, 'jfk.json');
    const r = await transcribe([JFK.flac, '--model', 'synthetic-micro', '--no-word-timestamps', '--out', out]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    const t = JSON.parse(await readFile(out, 'utf8'));
    expect(t.segments.length).toBeGreaterThan(0);
    expect(t.segments.every((s: { words?: unknown }) => s.words === undefined)).toBe(true);
  });

  // whisper.cpp's Silero VAD in ggml form ships with no dependency: it comes from the corpus.
  it.skipIf(!hasCorpus())(needsCorpus('--vad-model runs VAD inside whisper.cpp from its ggml weights'), async () => {
    const r = await transcribe([
      JFK.wav,
      '--model',
      'synthetic-micro',
      '--format',
      'vtt',
      '--vad-model',
      fixture('vad/silero-v6.2.0-ggml.bin'),
    ]);
    expect(r.code).toBe(0);
    const parsed = new WebVTTParser().parse(r.stdout, 'metadata');
    expect(parsed.errors).toEqual([]);
    expect(parsed.cues.length).toBeGreaterThan(0);
  });

  it('a missing --vad-model file is MODEL_LOAD_FAILED', async () => {
    const missing = await transcribe([JFK.wav, '--model', 'synthetic-micro', '--vad-model', join(dir, 'no.bin')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error: MODEL_LOAD_FAILED /m);
  });

  describe('bad input exits non-zero with its code', () => {
    it('a corrupt file → DECODE_FAILED', async () => {
      const file = join(dir, 'corrupt.mp3');
      await writeFile(file, Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 251)));
      const r = await transcribe([file, '--model', 'synthetic-micro']);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^error: DECODE_FAILED /m);
      expect(r.stdout).toBe('');
    });

    it('an empty file → EMPTY_MEDIA', async () => {
      const file = join(dir, 'empty.wav');
      await writeFile(file, '');
      const r = await transcribe([file, '--model', 'synthetic-micro']);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^error: EMPTY_MEDIA /m);
    });

    it('a video without audio → NO_AUDIO_STREAM', async () => {
      const file = join(dir, 'silent-video.mp4');
      await ffmpeg('-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=10', '-t', '2', '-an', '-c:v', 'mpeg4', file);
      const r = await transcribe([file, '--model', 'synthetic-micro']);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^error: NO_AUDIO_STREAM /m);
    });

    it('a missing file → SOURCE_NOT_FOUND; an unknown flag → usage error, exit 2', async () => {
      const missing = await transcribe([join(dir, 'nope.wav'), '--model', 'synthetic-micro']);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/^error: SOURCE_NOT_FOUND /m);
      const usage = await transcribe([JFK.wav, '--format', 'docx']);
      expect(usage.code).toBe(2);
      expect(usage.stderr).toMatch(/^error: USAGE --format must be one of/m);
      // An unknown option is quoted as typed, with the nearest known one (not Node's mixed quotes).
      const near = await transcribe([JFK.wav, '--formats', 'srt']);
      expect(near.code).toBe(2);
      expect(near.stderr).toMatch(/^error: USAGE unknown option --formats; did you mean --format\?$/m);
      const prompt = await transcribe([JFK.wav, '--prompt', 'word '.repeat(200)]);
      expect(prompt.code).toBe(2);
      expect(prompt.stderr).toMatch(
        /^error: USAGE --prompt: The prompt is 1000 bytes; whisper's prompt window is 224 tokens/m,
      );
    });

    it('--self-check with a <file-or-url> or a batch of 1, both flash-attention flags → usage error, exit 2', async () => {
      const withFile = await transcribe(['--self-check', JFK.wav]);
      expect(withFile.code).toBe(2);
      expect(withFile.stderr).toMatch(/^error: USAGE --self-check takes no <file-or-url>/m);
      const vtt = await transcribe(['--self-check', '--format', 'vtt']);
      expect(vtt.code).toBe(2);
      expect(vtt.stderr).toMatch(
        /^error: USAGE --self-check prints its verdict as a line, or as JSON with --format json/m,
      );
      const one = await transcribe(['--self-check', '--batch-size', '1']);
      expect(one.code).toBe(2);
      expect(one.stderr).toMatch(/^error: USAGE --self-check needs a --batch-size of at least 2/m);
      const both = await transcribe([JFK.wav, '--flash-attn', '--no-flash-attn']);
      expect(both.code).toBe(2);
      expect(both.stderr).toMatch(/^error: USAGE --flash-attn and --no-flash-attn exclude each other/m);
    });

    it('a real model that is not on disk, offline → MODEL_NOT_AVAILABLE naming what and where', async () => {
      const r = await transcribe([JFK.wav, '--model', 'tiny', '--offline', '--models-dir', dir]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^error: MODEL_NOT_AVAILABLE /m);
      expect(r.stderr).toContain('ggml-tiny.bin');
      expect(r.stderr).toContain(dir);
    });
  });

  describe('URLs to private addresses are refused without a connection', () => {
    let listener: Server;
    let port: number;
    let connections = 0;

    beforeAll(async () => {
      listener = createServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((ok) => listener.listen(0, '::', ok));
      port = (listener.address() as { port: number }).port;
    });
    afterAll(async () => {
      await new Promise((ok) => listener.close(ok));
    });

    // --no-vad: a URL is refused before any audio, so these children need not load the VAD's weights.
    const url = (u: string) => transcribe([u, '--model', 'synthetic-micro', '--no-vad'], 60_000);

    // Loopback spellings only: a policy bug must not be able to send a packet off this machine.
    // The full corpus (220 cases) runs in engine/source inside a loopback-only network namespace.
    // On the default port (media is fetched from 443 only): the address itself is refused. An IPv6
    // spelling of an IPv4 address is not a canonical URL at all.
    const hosts: Array<[string, string]> = [
      ['127.0.0.1', 'SOURCE_ADDRESS_BLOCKED'],
      ['localhost', 'SOURCE_ADDRESS_BLOCKED'],
      ['[::1]', 'SOURCE_ADDRESS_BLOCKED'],
      // One numeric spelling: the URL parser makes 2130706433, 0x7f000001 and 127.1 the same host
      // before the policy sees it (each is in the corpus, with more).
      ['2130706433', 'SOURCE_ADDRESS_BLOCKED'],
      ['[::ffff:127.0.0.1]', 'SOURCE_URL_INVALID'],
    ];
    for (const [host, code] of hosts) {
      it(`https://${host}/a.mp3 → ${code}`, async () => {
        const r = await url(`https://${host}/a.mp3`);
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(new RegExp(`^error: ${code} `, 'm'));
      });
    }

    it('https://127.0.0.1:PORT (a listener there) → SOURCE_PORT_NOT_ALLOWED, no connection', async () => {
      const before = connections;
      const r = await url(`https://127.0.0.1:${port}/a.mp3`);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^error: SOURCE_PORT_NOT_ALLOWED /m);
      expect(connections).toBe(before);
    });

    it('http:// → SOURCE_SCHEME_NOT_ALLOWED; userinfo → SOURCE_URL_INVALID', async () => {
      const http = await url(`http://127.0.0.1:${port}/a.mp3`);
      expect(http.stderr).toMatch(/^error: SOURCE_SCHEME_NOT_ALLOWED /m);
      const user = await url(`https://user:pw@127.0.0.1:${port}/a.mp3`);
      expect(user.stderr).toMatch(/^error: SOURCE_URL_INVALID /m);
      expect(connections).toBe(0);
    });
  });
});
