/**
 * The soak of parity.test.ts (`npm run test:long`): two minutes of speech, which makes whisper.cpp
 * seek window after window, so each check compares hundreds of tokens rather than a handful.
 * synthetic-tiny against upstream's whisper-cli, with the parity options (testing/parity.ts).
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPcm } from '../../test-support/ffmpeg.ts';
import { longSpeech } from '../../test-support/media.ts';
import { median } from '../../test-support/stats.ts';
import { WhisperModel } from './index.ts';
import { syntheticTiny } from './testing/fixtures.ts';
import { CliRuns, dtwDeltas, expectSameAsCli, PARITY_OPTIONS, plainAttentionModel } from './testing/parity.ts';

let tmp: string;
let model: WhisperModel;
let cli: CliRuns;
let wav: string;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'asr-parity-long-'));
  const modelPath = await syntheticTiny();
  cli = new CliRuns(modelPath, tmp);
  model = await WhisperModel.load(modelPath, { useGpu: false, flashAttn: false, dtw: 'tiny' });
  wav = await longSpeech(120);
}, 300_000);

afterAll(async () => {
  await model?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const OPTS = { language: 'en', ...PARITY_OPTIONS, rawTokens: true };

describe('two minutes of speech against whisper-cli', () => {
  it('same tokens, timestamps, DTW times and text over many 30 s seeks', async () => {
    expect(await expectSameAsCli(model, cli.get(wav, 'en'), wav, 'en')).toBeGreaterThan(500);
  }, 300_000);

  it("the DTW pass under flash attention, on whisper-cli's tokens: its DTW times within one frame", async () => {
    // As in parity.test.ts: the batcher's graphs attend without flash attention, the caches keep its
    // layout, and the DTW pass reads them.
    const plain = await plainAttentionModel(cli.modelPath);
    try {
      const theirs = cli.get(wav);
      const ours = await plain.transcribe(await readPcm(wav), OPTS);
      const { deltas, segments } = dtwDeltas(theirs, ours.tokens!);
      expect(segments).toBe(theirs.transcription.length);
      console.info(`DTW pass vs whisper-cli (cs): max ${Math.max(...deltas)} over ${deltas.length} tokens`);
      expect(deltas.length).toBeGreaterThan(250);
      for (const d of deltas) expect(d).toBeLessThanOrEqual(2);
    } finally {
      await plain.close();
    }
  }, 300_000);

  /**
   * The whole flash-attention path, the encoder's and the steps' flash attention included. On the CPU
   * that kernel accumulates V in f16, which moves a random-weight model's near-uniform attention, and
   * DTW over it is fragile, so the reference for "how close" is measured in the same run: the same
   * non-flash model on the same audio plus a -80 dB tone. Flash-attention DTW must stay far closer to
   * whisper-cli than that.
   */
  it('flash attention in the encoder too: far closer to whisper-cli than a -80 dB perturbation of the audio is', async () => {
    const fa = await WhisperModel.load(cli.modelPath, { useGpu: false, flashAttn: true, dtw: 'tiny' });
    try {
      const theirs = cli.get(wav);
      const pcm = await readPcm(wav);
      const withFa = await fa.transcribe(pcm, OPTS);
      const tone = pcm.map((v, i) => v + 1e-4 * Math.sin(i * 0.7311));
      const perturbed = await model.transcribe(tone, OPTS);
      const faDeltas = dtwDeltas(theirs, withFa.tokens!).deltas;
      const noiseDeltas = dtwDeltas(theirs, perturbed.tokens!).deltas;
      expect(faDeltas.length).toBeGreaterThan(3);
      expect(noiseDeltas.length).toBeGreaterThan(3);
      const [faMedian, noiseMedian] = [median(faDeltas), median(noiseDeltas)];
      console.info(
        `DTW vs whisper-cli (cs): flash attention median ${faMedian} (max ${Math.max(...faDeltas)}) over ${faDeltas.length} tokens, ` +
          `-80 dB tone without it median ${noiseMedian} over ${noiseDeltas.length}`,
      );
      expect(faMedian).toBeLessThanOrEqual(noiseMedian / 10);
    } finally {
      await fa.close();
    }
  }, 300_000);
});
