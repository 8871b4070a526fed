/**
 * One run of benchmarks/batch-memory.ts, in its own process so that its peak RSS is its own:
 * transcribes WAV with N windows in flight, batched N at a time, and prints one JSON line: peak RSS,
 * a digest of the transcript, and the batcher's counters.
 *
 *   node benchmarks/lib/batch-memory-child.ts WAV MODEL_PATH N on|off
 */
import { createHash } from 'node:crypto';
import { createEngine } from '../../engine/index.ts';

const [wav, modelPath, nArg, share] = process.argv.slice(2);
if (!wav || !modelPath || !nArg || (share !== 'on' && share !== 'off')) {
  console.error('usage: batch-memory-child.ts WAV MODEL_PATH N on|off');
  process.exit(2);
}
const n = Number(nArg);

const engine = await createEngine({
  modelPath,
  threads: 1,
  concurrency: n,
  batchSize: n,
  // The canary's own states would add the same fixed amount at every N; off, so the runs are the work.
  load: { useGpu: false, shareCompute: share === 'on', selfCheck: false, encodeBatch: 1 },
});
try {
  const t0 = performance.now();
  const transcript = await engine.transcribe(wav, { language: 'en', wordTimestamps: true });
  const seconds = (performance.now() - t0) / 1000;
  const digest = createHash('sha256')
    .update(JSON.stringify(transcript.segments.map((s) => [s.start, s.end, s.text, s.words])))
    .digest('hex');
  console.log(
    JSON.stringify({
      n,
      shareCompute: share === 'on',
      maxRssMb: process.resourceUsage().maxRSS / 1024,
      seconds,
      segments: transcript.segments.length,
      digest,
      stats: engine.model.batchStats(),
      windowBytes: engine.model.windowBytes(),
    }),
  );
} finally {
  await engine.close();
}
