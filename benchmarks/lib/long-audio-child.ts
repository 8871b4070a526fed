import { type PipelineModel, planConcurrency, transcribeStream } from '../../engine/pipeline/index.ts';
import type { AsrOptions, RunOptions } from '../../engine/types.ts';
import { SileroVad } from '../../engine/vad/silero.ts';
import { readPcm } from '../../test-support/ffmpeg.ts';
import { fixture } from '../../test-support/fixtures.ts';
import { longAudio } from '../../test-support/long-audio.ts';

const [minutesArg, modelArg = 'none', concArg = 'auto', threadsArg] = process.argv.slice(2);
const minutes = Number(minutesArg);
const concurrency = concArg === 'auto' ? 'auto' : Number(concArg);
const threads = threadsArg ? Number(threadsArg) : undefined;

/** Answers every window at once: isolates the pipeline from whisper (see long-audio.ts). */
class InstantModel implements PipelineModel {
  readonly info = { backend: 'cpu' as const };
  async detectLanguage() {
    return { language: 'en', probability: 1 };
  }
  async transcribe(pcm: Float32Array, opts: AsrOptions, run: RunOptions & { offset?: number }) {
    const start = run.offset ?? 0;
    return {
      language: opts.language ?? 'en',
      segments: [{ start, end: start + pcm.length / 16000, text: ' window' }],
    };
  }
}

async function loadModel(): Promise<{ model: PipelineModel; close: () => Promise<void> }> {
  if (modelArg === 'none') return { model: new InstantModel(), close: async () => {} };
  const asr = (await import('../../engine/asr/index.ts' as string)) as {
    WhisperModel: { load(p: string): Promise<PipelineModel & { close(): Promise<void> }> };
  };
  let path = modelArg;
  if (!modelArg.includes('/')) {
    const models = (await import('../../models/index.ts' as string)) as {
      resolveModel(n: string): Promise<{ path: string }>;
    };
    path = (await models.resolveModel(modelArg)).path;
  }
  const model = await asr.WhisperModel.load(path);
  return { model, close: () => model.close() };
}

const clips = await Promise.all(
  ['speech/jfk/jfk.wav', 'speech/multilingual/test.wav', 'speech/multilingual/test_fr.wav'].map((f) =>
    readPcm(fixture(f)),
  ),
);
const { model, close } = await loadModel();
const vad = await SileroVad.load();
const plan = planConcurrency({ backend: model.info.backend, concurrency, threads });
const rssBefore = process.memoryUsage().rss;

let windows = 0;
let maxHeldSec = 0;
const counting: PipelineModel = {
  info: model.info,
  detectLanguage: (p, o, r) => model.detectLanguage(p, o, r),
  transcribe: (p, o, r) => {
    windows++;
    return model.transcribe(p, o, r);
  },
};
let readSec = 0;
const t0 = performance.now();
const transcript = await transcribeStream(
  longAudio({
    durationSec: minutes * 60,
    clips,
    gapSec: [0.3, 4],
    seed: 3,
    onChunk: (end) => {
      readSec = end / 16000;
    },
  }),
  counting,
  { language: 'en', concurrency, ...(threads ? { threads } : {}), vad: { detector: vad } },
  {
    onProgress: (p) => {
      if (p.stage === 'asr' && p.done !== undefined) maxHeldSec = Math.max(maxHeldSec, readSec - p.done);
    },
  },
);
const wallMs = performance.now() - t0;
await vad.close();
await close();
const MiB = 2 ** 20;
console.log(
  JSON.stringify({
    minutes,
    wallMs: Math.round(wallMs),
    rssBeforeMiB: Math.round(rssBefore / MiB),
    peakRssMiB: Math.round((process.resourceUsage().maxRSS * 1024) / MiB),
    windows,
    segments: transcript.segments.length,
    concurrency: plan.concurrency,
    threadsPerJob: plan.threadsPerJob,
    backend: model.info.backend,
    maxHeldSec: Math.round(maxHeldSec * 10) / 10,
  }),
);
