/**
 * Parity on quantized weights: synthetic-tiny quantized to q8_0 and to q5_0 by whisper.cpp's own
 * quantizer (models/quantize.ts; built from the same pinned source as whisper-cli), the same file and
 * audio through our addon and through upstream's whisper-cli must give the same tokens, token
 * timestamps, DTW times and text (testing/parity.ts, the parity options: greedy, 2 threads, no flash
 * attention, DTW with the tiny alignment heads). Batched decoding of those files gives each window the
 * tokens it gets alone, and the DTW pass under flash attention stays within one frame of whisper-cli's
 * on its tokens, as on f16 (parity.test.ts). Here: the JFK sample through both, and the DTW pass;
 * parity-quantized.long.test.ts (`npm run test:long`) adds espeak-ng speech and batched against alone.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveModel } from '../../models/index.ts';
import { readPcm } from '../../test-support/ffmpeg.ts';
import { jfkSample } from '../../test-support/media.ts';
import { WhisperModel } from './index.ts';
import { CliRuns, dtwDeltas, expectSameAsCli, PARITY_OPTIONS, plainAttentionModel } from './testing/parity.ts';

let tmp: string;

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'asr-parity-quantized-'));
});

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

for (const type of ['q8_0', 'q5_0'] as const) {
  describe(`synthetic-tiny-${type} against whisper-cli on the same file`, () => {
    let path: string;
    let cli: CliRuns;
    let model: WhisperModel;

    beforeAll(async () => {
      path = (await resolveModel(`synthetic-tiny-${type}`)).path;
      cli = new CliRuns(path, tmp);
      model = await WhisperModel.load(path, { useGpu: false, flashAttn: false, dtw: 'tiny' });
    }, 120_000);

    afterAll(async () => {
      await model?.close();
    });

    it('the JFK sample: same tokens, timestamps, DTW times and text', async () => {
      const wav = await jfkSample('wav');
      expect(await expectSameAsCli(model, cli.get(wav, 'en'), wav, 'en')).toBeGreaterThan(0);
    }, 240_000);

    it("the DTW pass under flash attention, on whisper-cli's tokens: within one frame of its times", async () => {
      const plain = await plainAttentionModel(path);
      try {
        const wav = await jfkSample('wav');
        const theirs = cli.get(wav);
        const ours = await plain.transcribe(await readPcm(wav), { language: 'en', ...PARITY_OPTIONS, rawTokens: true });
        const { deltas, segments } = dtwDeltas(theirs, ours.tokens!);
        expect(segments).toBe(theirs.transcription.length);
        expect(deltas.length).toBeGreaterThan(0);
        for (const d of deltas) expect(d).toBeLessThanOrEqual(2);
      } finally {
        await plain.close();
      }
    }, 240_000);
  });
}
