/**
 * One cold transcription in a fresh process, the way whisper-cli does one: start Node, import the
 * engine, load the model, decode the file (engine/decode: ffmpeg), transcribe, free the model.
 * The parent times the whole process; this prints the inside split as one JSON line on stdout.
 *
 *   node benchmarks/lib/ours-cold.ts '<json: {model, wav, load, opts}>'
 */
import { performance } from 'node:perf_hooks';
import { type LoadOptions, type TranscribeOptions, WhisperModel } from '../../engine/asr/index.ts';
import { decodeToPcm } from '../../engine/decode/index.ts';

interface Job {
  model: string;
  wav: string;
  load: LoadOptions;
  opts: TranscribeOptions;
}

const job = JSON.parse(process.argv[2] ?? '') as Job;
// performance.now() counts from the process's time origin, so this is Node start + imports.
const startupMs = performance.now();
let t = performance.now();
const model = await WhisperModel.load(job.model, job.load);
const loadMs = performance.now() - t;
t = performance.now();
const pcm = await decodeToPcm({ path: job.wav });
const decodeMs = performance.now() - t;
t = performance.now();
const result = await model.transcribe(pcm, job.opts);
const transcribeMs = performance.now() - t;
t = performance.now();
await model.close();
const closeMs = performance.now() - t;
process.stdout.write(
  `${JSON.stringify({
    startupMs,
    loadMs,
    decodeMs,
    transcribeMs,
    closeMs,
    text: result.segments.map((s) => s.text).join(''),
    segments: result.segments.length,
  })}\n`,
);
