/**
 * Parity: the same model, audio and parameters through our addon and through upstream's whisper-cli
 * (built from the unpatched source) must give the same tokens, token timestamps, DTW times and text.
 * With random weights the text means nothing, so this is how correctness is shown.
 *
 * whisper-cli reads the 16 kHz mono wav itself; the addon gets the same file decoded by ffmpeg
 * (bit-identical samples for s16 wav). Both: greedy, temperature 0, no fallback, 2 threads, no
 * flash attention, DTW with the tiny alignment heads (testing/parity.ts). synthetic-tiny, real shape.
 * Most clips decode a few tokens; the en-gb sentence seeks inside its window and decodes about 150
 * in 74 segments. parity.long.test.ts (`npm run test:long`) repeats the checks on two minutes of
 * speech (many 30 s windows, hundreds of tokens).
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPcm } from '../../test-support/ffmpeg.ts';
import { jfkSample, SENTENCES, speech } from '../../test-support/media.ts';
import { WhisperModel } from './index.ts';
import { syntheticTiny } from './testing/fixtures.ts';
import {
  CliRuns,
  dtwDeltas,
  expectSameAsCli,
  isTextToken,
  PARITY_OPTIONS,
  plainAttentionModel,
} from './testing/parity.ts';
import { toWav16k } from './testing/whisper-cli.ts';

let tmp: string;
let model: WhisperModel;
let cli: CliRuns;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'asr-parity-'));
  const modelPath = await syntheticTiny();
  cli = new CliRuns(modelPath, tmp);
  model = await WhisperModel.load(modelPath, { useGpu: false, flashAttn: false, dtw: 'tiny' });
});

afterAll(async () => {
  await model?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** The parity set's 22.05 kHz espeak-ng speech, resampled to a 16 kHz wav once. */
let speech22k: string | undefined;
async function speechResampled(): Promise<string> {
  speech22k ??= toWav16k(
    await speech(SENTENCES.en.slice(7, 9).join(' '), { voice: 'en-gb', native: true }),
    join(tmp, 'speech16k.wav'),
  );
  return speech22k;
}
/** 5.4 s of en-gb speech on which synthetic-tiny seeks inside the window: ~150 tokens, 74 segments. */
const seeking = () => speech(SENTENCES.en[0]!, { voice: 'en-gb' });
const compare = async (wav: string, language: string) => expectSameAsCli(model, cli.get(wav, language), wav, language);

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

  it('speech on which the model seeks inside its window (74 segments): the same at every seek', async () => {
    expect(await compare(await seeking(), 'en')).toBeGreaterThan(100);
  }, 240_000);

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
 * 2. The whole flash-attention path gives every text token a time inside its window, in order. (How
 *    close those times stay to whisper-cli's over two minutes is parity.long.test.ts'.)
 */
describe('DTW with flash attention on, against whisper-cli without it', () => {
  const OPTS = { language: 'en', ...PARITY_OPTIONS, rawTokens: true };

  it("the DTW pass on whisper-cli's tokens: its DTW times, within one frame, on every token of the parity set", async () => {
    const plain = await plainAttentionModel(cli.modelPath);
    try {
      const set = [
        await jfkSample('wav'),
        await speech(SENTENCES.en.slice(4, 7).join(' ')),
        await speechResampled(),
        await seeking(),
      ];
      const all: number[] = [];
      for (const wav of set) {
        const theirs = cli.get(wav);
        const ours = await plain.transcribe(await readPcm(wav), OPTS);
        const { deltas, segments } = dtwDeltas(theirs, ours.tokens!);
        // every segment decoded as whisper-cli's did: the same tokens, so the same DTW input
        expect(segments).toBe(theirs.transcription.length);
        expect(ours.tokens!.length).toBe(theirs.transcription.length);
        all.push(...deltas);
      }
      expect(plain.info.batchAttention).toBe('per-call');
      expect(plain.batchStats()!.encodes).toBeGreaterThan(0); // the batched encoder took the passes
      console.info(
        `DTW pass vs whisper-cli on the same tokens (cs): max ${Math.max(...all)} over ${all.length} tokens`,
      );
      expect(all.length).toBeGreaterThan(50); // 79 text tokens here: most are the seeking clip's
      for (const d of all) expect(d).toBeLessThanOrEqual(2);
    } finally {
      await plain.close();
    }
  }, 300_000);

  it("every text token gets a DTW time inside its segment's window, in order (the JFK sample)", async () => {
    const fa = await WhisperModel.load(cli.modelPath, { useGpu: false, flashAttn: true, dtw: 'tiny' });
    try {
      const ours = await fa.transcribe(await readPcm(await jfkSample('wav')), OPTS);
      expect(fa.info).toMatchObject({ flashAttn: true, dtw: 'tiny' });
      expect(ours.tokens!.flat().filter(isTextToken).length).toBeGreaterThan(0);
      for (const seg of ours.tokens!) {
        const times = seg.filter(isTextToken).map((t) => t.tDtw);
        for (const t of times) expect(t).toBeGreaterThanOrEqual(0);
        for (const t of times) expect(t).toBeLessThanOrEqual(ours.duration + 0.02);
        expect(times).toEqual([...times].sort((a, b) => a! - b!));
      }
    } finally {
      await fa.close();
    }
  }, 240_000);
});
