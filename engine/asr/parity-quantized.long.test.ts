/**
 * The rest of parity-quantized.test.ts' checks (`npm run test:long`). Parity on quantized weights: synthetic-tiny quantized to q8_0 and to q5_0 by whisper.cpp's own
 * quantizer (models/quantize.ts; built from the same pinned source as whisper-cli), the same file and
 * audio through our addon and through upstream's whisper-cli must give the same tokens, token
 * timestamps, DTW times and text (testing/parity.ts, the parity options: greedy, 2 threads, no flash
 * attention, DTW with the tiny alignment heads). Batched decoding of those files gives each window the
 * tokens it gets alone. Here: espeak-ng speech through both, and three windows batched against each alone.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveModel } from '../../models/index.ts';
import { SENTENCES, speech } from '../../test-support/media.ts';
import { WhisperModel } from './index.ts';
import { aloneResults, batchWindows, everyBatchSize, type Window } from './testing/batch-windows.ts';
import { CliRuns, expectSameAsCli } from './testing/parity.ts';

let tmp: string;
let windows: Window[];

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'asr-parity-quantized-long-'));
  // The JFK sample and two espeak-ng sentences: windows that end after different numbers of tokens.
  windows = (await batchWindows('essential')).slice(0, 3);
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

    it('English speech: same tokens, timestamps, DTW times and text', async () => {
      const wav = await speech(SENTENCES.en.slice(4, 7).join(' '));
      expect(await expectSameAsCli(model, cli.get(wav, 'en'), wav, 'en')).toBeGreaterThan(0);
    }, 240_000);

    it('batched (3 windows in one batch, batched encoder) equals each window alone', async () => {
      const alone = await aloneResults(path, windows);
      await everyBatchSize(path, windows, alone, 3, 3);
    }, 240_000);
  });
}
