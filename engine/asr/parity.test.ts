/**
 * Parity: the same model, audio and parameters through our addon and through whisper-cli built
 * from the same whisper.cpp source must give the same tokens, token timestamps, DTW times and
 * text. With random weights the text means nothing, so this is how correctness is shown.
 *
 * whisper-cli reads the 16 kHz mono wav itself; the addon gets the same file decoded by ffmpeg
 * (bit-identical samples for s16 wav). Both: greedy, temperature 0, no fallback, 2 threads, no
 * flash attention, DTW with the tiny alignment heads.
 */

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPcm } from '../../test-support/ffmpeg.ts';
import { jfkSample, longSpeech, SENTENCES, speech } from '../../test-support/media.ts';
import { median } from '../../test-support/stats.ts';
import { type RawToken, WhisperModel, whisperCliPath } from './index.ts';
import { syntheticTiny } from './testing/fixtures.ts';
import { parseCliJson, toWav16k } from './testing/whisper-cli.ts';
import { loadWithSeams } from './testing.ts';

const THREADS = 2;

interface CliToken {
  text: string;
  offsets?: { from: number; to: number };
  id: number;
  p: number;
  t_dtw: number;
}
interface CliSegment {
  offsets: { from: number; to: number };
  text: string;
  tokens: CliToken[];
}
interface CliJson {
  result: { language: string };
  transcription: CliSegment[];
}

let tmp: string;
let modelPath: string;
let model: WhisperModel;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'asr-parity-'));
  modelPath = await syntheticTiny();
  model = await WhisperModel.load(modelPath, { useGpu: false, flashAttn: false, dtw: 'tiny' });
});

afterAll(async () => {
  await model?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

function runCli(wav: string, language: string): CliJson {
  const outBase = join(tmp, `cli-${Math.random().toString(36).slice(2)}`);
  const args = [
    ...['-m', modelPath, '-f', wav, '-t', String(THREADS), '-l', language],
    ...['-bs', '1', '-bo', '1', '-tp', '0', '-nf', '-nfa', '-ng', '--dtw', 'tiny'],
    ...['-ojf', '-of', outBase, '-np'],
  ];
  const r = spawnSync(whisperCliPath(), args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`whisper-cli failed (${r.status}): ${r.stderr}`);
  return parseCliJson<CliJson>(readFileSync(`${outBase}.json`, 'utf8'));
}

/** whisper-cli's result for a file and language, run once per pair (several tests read the same run). */
const cliRuns = new Map<string, CliJson>();
function cliFor(wav: string, language = 'en'): CliJson {
  const key = `${language}\0${wav}`;
  const cached = cliRuns.get(key);
  if (cached) return cached;
  const r = runCli(wav, language);
  cliRuns.set(key, r);
  return r;
}

/** The parity set's 22.05 kHz espeak-ng speech, resampled to a 16 kHz wav once. */
let speech22k: string | undefined;
async function speechResampled(): Promise<string> {
  speech22k ??= toWav16k(
    await speech(SENTENCES.en.slice(7, 9).join(' '), { voice: 'en-gb', native: true }),
    join(tmp, 'speech16k.wav'),
  );
  return speech22k;
}

/** How many more bytes `b` needs to end on a whole UTF-8 character (whisper-cli's rule). */
function utf8TrailingBytesNeeded(b: Uint8Array): number {
  let i = b.length - 1;
  while (i >= 0 && (b[i]! & 0xc0) === 0x80) i--;
  if (i < 0) return 0;
  const c = b[i]!;
  const expected =
    (c & 0x80) === 0 ? 1 : (c & 0xe0) === 0xc0 ? 2 : (c & 0xf0) === 0xe0 ? 3 : (c & 0xf8) === 0xf0 ? 4 : 0;
  if (expected === 0) return 0;
  const have = b.length - i;
  return have >= expected ? 0 : expected - have;
}

interface Merged {
  id: number;
  text: string;
  p: number;
  t0: number;
  t1: number;
  tDtw: number;
}

/** Our tokens merged as whisper-cli merges them before writing JSON; times in centiseconds. */
function mergeLikeCli(tokens: RawToken[]): Merged[] {
  const cs = (t: number) => (t < 0 ? -1 : Math.round(t * 100));
  const out: Merged[] = [];
  for (let j = 0; j < tokens.length; ) {
    const first = tokens[j]!;
    let bytes = first.bytes;
    let t1 = first.t1;
    j++;
    while (j < tokens.length && utf8TrailingBytesNeeded(bytes) > 0) {
      const next = tokens[j]!;
      bytes = Buffer.concat([bytes, next.bytes]);
      if (next.t1 >= 0) t1 = next.t1;
      j++;
    }
    out.push({
      id: first.id,
      text: Buffer.from(bytes).toString('utf8'),
      p: first.p,
      t0: cs(first.t0),
      t1: cs(t1),
      tDtw: first.tDtw === undefined ? -1 : cs(first.tDtw),
    });
  }
  return out;
}

async function compare(wav: string, language: string): Promise<number> {
  const cli = cliFor(wav, language);
  const ours = await model.transcribe(
    await readPcm(wav),
    {
      language,
      threads: THREADS,
      beamSize: 1,
      bestOf: 1,
      temperature: 0,
      temperatureIncrement: 0,
      rawTokens: true,
    },
    {},
  );

  expect(ours.language).toBe(cli.result.language);
  expect(ours.segments).toHaveLength(cli.transcription.length);
  let nTokens = 0;
  cli.transcription.forEach((cseg, i) => {
    const seg = ours.segments[i]!;
    // Our segments are clamped to the audio (whisper.cpp's last timestamp can point past it);
    // the raw token times below are compared unclamped.
    const endMs = Math.round(ours.duration * 100) * 10; // whisper.cpp times are centiseconds
    expect(Math.round(seg.start * 1000), `segment ${i} start`).toBe(Math.min(cseg.offsets.from, endMs));
    expect(Math.round(seg.end * 1000), `segment ${i} end`).toBe(Math.min(cseg.offsets.to, endMs));
    expect(seg.text).toBe(cseg.text.trim());

    const merged = mergeLikeCli(ours.tokens![i]!);
    expect(merged.map((t) => t.id)).toEqual(cseg.tokens.map((t) => t.id));
    expect(merged.map((t) => t.text)).toEqual(cseg.tokens.map((t) => t.text));
    // whisper-cli writes token times as milliseconds (centiseconds × 10), only when it has both.
    expect(merged.map((t) => (t.t0 >= 0 && t.t1 >= 0 ? [t.t0 * 10, t.t1 * 10] : null))).toEqual(
      cseg.tokens.map((t) => (t.offsets ? [t.offsets.from, t.offsets.to] : null)),
    );
    expect(merged.map((t) => t.tDtw)).toEqual(cseg.tokens.map((t) => t.t_dtw));
    // whisper-cli prints p with 6 significant digits.
    merged.forEach((t, k) => {
      expect(Math.abs(t.p - cseg.tokens[k]!.p)).toBeLessThanOrEqual(1e-5 * t.p);
    });
    nTokens += merged.length;
  });
  return nTokens;
}

// Any audio will do: the same model on the same samples must give the same tokens. The inputs are
// built from what ships (test-support/media.ts): the JFK sample and espeak-ng speech.
describe('parity with whisper-cli (same source, same parameters)', () => {
  it('the JFK sample: same tokens, timestamps, DTW times and text', async () => {
    expect(await compare(await jfkSample('wav'), 'en')).toBeGreaterThan(0);
  }, 240_000);

  it('the JFK sample with language auto-detection: same language and tokens', async () => {
    expect(await compare(await jfkSample('wav'), 'auto')).toBeGreaterThan(0);
  }, 240_000);

  it('English speech (16 kHz): same tokens, timestamps, DTW times and text', async () => {
    expect(await compare(await speech(SENTENCES.en.slice(4, 7).join(' ')), 'en')).toBeGreaterThan(0);
  }, 240_000);

  it('two minutes of speech (many 30 s seeks, hundreds of tokens): same tokens, timestamps and text', async () => {
    // A random-weight model says little per clip; a long input makes whisper.cpp seek window after
    // window, so this case compares hundreds of tokens rather than a handful.
    expect(await compare(await longSpeech(120), 'en')).toBeGreaterThan(500);
  }, 480_000);

  it('speech rendered at 22.05 kHz, resampled to 16 kHz: same tokens, timestamps, DTW times and text', async () => {
    expect(await compare(await speechResampled(), 'en')).toBeGreaterThan(0);
  }, 240_000);
});

/**
 * DTW under flash attention (native/patches/0006). whisper.cpp turns DTW off when flash attention is on,
 * because flash attention never materialises the alignment heads' attention weights. Our DTW pass
 * attends without it, over the caches' flash-attention layout, as openai-whisper's alignment pass
 * does; every decoder step and the encoder keep flash attention.
 *
 * 1. The pass, held to upstream on the same tokens: with the batcher's graphs attending without flash
 *    attention (testFault 'plain-attention': batched encoder and per-call steps; the caches keep flash
 *    attention's layout, which is what the pass reads), a flash-attention context decodes whisper-cli's
 *    tokens, so its DTW times must be whisper-cli's within one 20 ms frame (2 cs) on every token of the
 *    parity set.
 * 2. The whole flash-attention path, the encoder's and the steps' flash attention included. On the CPU
 *    that kernel accumulates V in f16, which moves a random-weight model's near-uniform attention, and
 *    DTW over it is fragile, so the reference for "how close" is measured in the same run: the same
 *    non-flash model on the same audio plus a -80 dB tone. Flash-attention DTW must stay far closer to
 *    whisper-cli than that, and give every text token a time inside its window, in order.
 */
describe('DTW with flash attention on, against whisper-cli without it', () => {
  let fa: WhisperModel;
  let plain: WhisperModel;
  beforeAll(async () => {
    fa = await WhisperModel.load(modelPath, { useGpu: false, flashAttn: true, dtw: 'tiny' });
    plain = await loadWithSeams(
      modelPath,
      {
        useGpu: false,
        flashAttn: true,
        dtw: 'tiny',
        batchSize: 2,
        encodeBatch: 2,
        batchAttention: 'per-call',
        selfCheck: false,
      },
      {},
      { testFault: 'plain-attention' },
    );
  });
  afterAll(async () => {
    await fa?.close();
    await plain?.close();
  });

  const OPTS = { language: 'en', threads: THREADS, beamSize: 1, bestOf: 1, temperature: 0, temperatureIncrement: 0 };

  /**
   * |DTW time - whisper-cli's| in centiseconds, token by token, over the segments whose tokens match
   * (up to the first that differs), and how many segments that was.
   */
  function dtwDeltas(cli: CliJson, tokens: RawToken[][]): { deltas: number[]; segments: number } {
    const deltas: number[] = [];
    let segments = 0;
    for (; segments < Math.min(cli.transcription.length, tokens.length); segments++) {
      const merged = mergeLikeCli(tokens[segments]!);
      const theirs = cli.transcription[segments]!.tokens;
      if (merged.map((t) => t.id).join() !== theirs.map((t) => t.id).join()) break; // decoding diverged
      merged.forEach((t, k) => {
        if (theirs[k]!.t_dtw >= 0) deltas.push(Math.abs(t.tDtw - theirs[k]!.t_dtw));
      });
    }
    return { deltas, segments };
  }

  it("the DTW pass on whisper-cli's tokens: its DTW times, within one frame, on every token of the parity set", async () => {
    const set = [
      await jfkSample('wav'),
      await speech(SENTENCES.en.slice(4, 7).join(' ')),
      await speechResampled(),
      await longSpeech(120),
    ];
    const all: number[] = [];
    for (const wav of set) {
      const cli = cliFor(wav);
      const ours = await plain.transcribe(await readPcm(wav), { ...OPTS, rawTokens: true });
      const { deltas, segments } = dtwDeltas(cli, ours.tokens!);
      // every segment decoded as whisper-cli's did: the same tokens, so the same DTW input
      expect(segments).toBe(cli.transcription.length);
      expect(ours.tokens!.length).toBe(cli.transcription.length);
      all.push(...deltas);
    }
    expect(plain.info.batchAttention).toBe('per-call');
    expect(plain.batchStats()!.encodes).toBeGreaterThan(0); // the batched encoder took the passes
    console.info(`DTW pass vs whisper-cli on the same tokens (cs): max ${Math.max(...all)} over ${all.length} tokens`);
    expect(all.length).toBeGreaterThan(250);
    for (const d of all) expect(d).toBeLessThanOrEqual(2);
  }, 480_000);

  it("every text token gets a DTW time inside its segment's window, in order (the JFK sample)", async () => {
    const ours = await fa.transcribe(await readPcm(await jfkSample('wav')), { ...OPTS, rawTokens: true });
    expect(fa.info).toMatchObject({ flashAttn: true, dtw: 'tiny' });
    // whisper.cpp's special tokens print as [_NAME_]; every other token is text and gets a DTW time.
    const isText = (t: RawToken) => !/^\[_[A-Z0-9_]+\]$/.test(t.text);
    expect(ours.tokens!.flat().filter(isText).length).toBeGreaterThan(0);
    for (const seg of ours.tokens!) {
      const times = seg.filter(isText).map((t) => t.tDtw);
      for (const t of times) expect(t).toBeGreaterThanOrEqual(0);
      for (const t of times) expect(t).toBeLessThanOrEqual(ours.duration + 0.02);
      expect(times).toEqual([...times].sort((a, b) => a! - b!));
    }
  }, 240_000);

  it('two minutes of speech, flash attention in the encoder too: far closer to whisper-cli than a -80 dB perturbation of the audio is', async () => {
    const wav = await longSpeech(120);
    const cli = cliFor(wav);
    const pcm = await readPcm(wav);
    const withFa = await fa.transcribe(pcm, { ...OPTS, rawTokens: true });
    const tone = pcm.map((v, i) => v + 1e-4 * Math.sin(i * 0.7311));
    const perturbed = await model.transcribe(tone, { ...OPTS, rawTokens: true });
    const faDeltas = dtwDeltas(cli, withFa.tokens!).deltas;
    const noiseDeltas = dtwDeltas(cli, perturbed.tokens!).deltas;
    expect(faDeltas.length).toBeGreaterThan(3);
    expect(noiseDeltas.length).toBeGreaterThan(3);
    const [faMedian, noiseMedian] = [median(faDeltas), median(noiseDeltas)];
    console.info(
      `DTW vs whisper-cli (cs): flash attention median ${faMedian} (max ${Math.max(...faDeltas)}) over ${faDeltas.length} tokens, ` +
        `-80 dB tone without it median ${noiseMedian} over ${noiseDeltas.length}`,
    );
    expect(faMedian).toBeLessThanOrEqual(noiseMedian / 10);
  }, 480_000);
});
