/**
 * One cold transcription through the engine's front door in a fresh process, the way whisper-cli does
 * one: start Node, import the engine, createEngine (loads the model), transcribe({path}) (ffmpeg decode
 * + whisper.cpp), close. The decoded file goes to whisper.cpp in one call, as whisper-cli does
 * (`engine.model.transcribe` on `decodeToPcm`'s buffer; the engine's own `vad: false` streams 30 s
 * windows instead). The parent times the whole process; this prints the inside split as one JSON line on stdout.
 *
 *   node benchmarks/lib/engine-cold.ts '<json: {model, wav, load, opts}>'
 */
import { performance } from 'node:perf_hooks';
import type { LoadOptions, TranscribeOptions } from '../../engine/asr/index.ts';
import { decodeToPcm } from '../../engine/decode/index.ts';
import { createEngine } from '../../engine/index.ts';

interface Job {
  model: string;
  wav: string;
  load: LoadOptions;
  opts: TranscribeOptions;
}

const job = JSON.parse(process.argv[2] ?? '') as Job;
// performance.now() counts from the process's time origin: Node start + imports.
const startupMs = performance.now();
let t = performance.now();
const engine = await createEngine({ modelPath: job.model, load: job.load, threads: job.opts.threads, vad: false });
const loadMs = performance.now() - t;
t = performance.now();
const transcript = await engine.model.transcribe(await decodeToPcm({ path: job.wav }), job.opts);
const transcribeMs = performance.now() - t;
t = performance.now();
await engine.close();
const closeMs = performance.now() - t;
process.stdout.write(
  `${JSON.stringify({
    startupMs,
    loadMs,
    transcribeMs,
    closeMs,
    text: transcript.segments.map((s) => s.text.trim()).join('\n'),
  })}\n`,
);
