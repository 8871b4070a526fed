/**
 * One side of benchmarks/models.ts in a process of its own, so that /usr/bin/time's user+sys CPU and
 * peak RSS are this run's alone: loads a model on the CPU, transcribes one wav once, prints one JSON
 * line (the tokens, the segments' text, the CPU of the load and of the transcription, the allocator's
 * bytes per window).
 *
 *   node benchmarks/lib/models-child.ts <model.bin> <clip.wav> <dtw-preset> <f16|q8_0> <flash|no-flash> <batchSize>
 */

import { WhisperModel } from '../../engine/asr/index.ts';
import { readPcm } from '../../test-support/ffmpeg.ts';
import { GREEDY } from './batched.ts';

const [path, wav, dtw, kvType, flash, batch] = process.argv.slice(2);
if (!path || !wav || !dtw || (kvType !== 'f16' && kvType !== 'q8_0') || !flash || !batch) {
  throw new Error('usage: models-child.ts <model> <wav> <dtw> <f16|q8_0> <flash|no-flash> <batchSize>');
}
const batchSize = Number(batch);
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const c0 = cpu();
const model = await WhisperModel.load(path, {
  useGpu: false,
  flashAttn: flash === 'flash',
  kvType,
  dtw,
  batchSize,
  // batched: per-call steps with the batcher's shared compute, so windowBytes().perWindow is a window's
  // caches alone, as the allocator gave them
  ...(batchSize > 1 ? { batchAttention: 'per-call' as const, batchThreads: 1, selfCheck: false } : {}),
});
const c1 = cpu();
const pcm = await readPcm(wav);
const r = await model.transcribe(pcm, { language: 'en', threads: 1, ...GREEDY, rawTokens: true });
const c2 = cpu();
const out = {
  info: { flashAttn: model.info.flashAttn, kvType: model.info.kvType, batchSize: model.info.batchSize },
  tokens: r.tokens!.flat().map((t) => t.id),
  text: r.segments.map((s) => s.text).join(' '),
  loadCpuMs: c1 - c0,
  transcribeCpuMs: c2 - c1,
  windowBytes: model.windowBytes(),
};
await model.close();
process.stdout.write(`${JSON.stringify(out)}\n`);
