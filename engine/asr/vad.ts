/** whisper.cpp's built-in Silero VAD: a model loaded once (WhisperVadModel), or one call (detectSpeechWhisperVad). */

import { existsSync } from 'node:fs';
import { EngineError } from '../errors.ts';
import type { RunOptions } from '../types.ts';
import { addon, type NativeVadModel } from './addon.ts';
import { runNative } from './job.ts';
import type { WhisperVadOptions } from './types.ts';
import { checkInt, checkNum, checkObject, checkPcm, checkSignal, invalid, MAX_THREADS } from './validate.ts';
import { csToSeconds } from './words.ts';

function vadParams(opts: WhisperVadOptions) {
  const o = checkObject('VAD options', opts);
  return {
    threshold: checkNum('threshold', o.threshold, 0, 1),
    minSpeechMs: checkInt('minSpeechMs', o.minSpeechMs, 0, 600_000),
    minSilenceMs: checkInt('minSilenceMs', o.minSilenceMs, 0, 600_000),
    speechPadMs: checkInt('speechPadMs', o.speechPadMs, 0, 60_000),
  };
}

/**
 * whisper.cpp's built-in Silero VAD with its ggml weights loaded once (whisper.cpp's own
 * whisper_full reloads them for every call). Detections on one model take turns: the context
 * carries the LSTM state of the detection running on it. The VAD file is whisper.cpp's to
 * validate (it is configuration, not user input).
 */
export class WhisperVadModel {
  readonly #native: NativeVadModel;
  readonly #inflight = new Set<Promise<unknown>>();
  #closing: Promise<void> | undefined;

  private constructor(nativeModel: NativeVadModel) {
    this.#native = nativeModel;
  }

  static async load(
    vadModelPath: string,
    opts: { threads?: number } = {},
    run: RunOptions = {},
  ): Promise<WhisperVadModel> {
    if (typeof vadModelPath !== 'string' || vadModelPath === '') throw invalid('vadModelPath must be a path.');
    const threads = checkInt('threads', checkObject('VAD load options', opts).threads, 1, MAX_THREADS) ?? 1;
    const signal = checkSignal(checkObject('run options', run).signal);
    if (!existsSync(vadModelPath)) {
      throw new EngineError('MODEL_LOAD_FAILED', `The VAD model file ${vadModelPath} does not exist.`, {
        details: { path: vadModelPath },
      });
    }
    const lib = addon();
    const nativeModel = await runNative(() => lib.vadLoad(vadModelPath, { threads }), signal);
    return new WhisperVadModel(nativeModel);
  }

  /** Speech spans in seconds from the start of `pcm`. An abort stops it between 32 ms chunks. */
  async detect(
    pcm: Float32Array,
    opts: WhisperVadOptions = {},
    run: RunOptions = {},
  ): Promise<Array<{ start: number; end: number }>> {
    const samples = checkPcm(pcm);
    const params = vadParams(opts);
    const signal = checkSignal(checkObject('run options', run).signal);
    if (this.#closing) throw new EngineError('MODEL_CLOSED', 'The VAD model has been closed.');
    const p = runNative(() => this.#native.detect(samples, params), signal);
    this.#inflight.add(p);
    let flat: Float32Array;
    try {
      flat = await p;
    } finally {
      this.#inflight.delete(p);
    }
    const spans: Array<{ start: number; end: number }> = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      spans.push({ start: csToSeconds(flat[i]!, 0), end: csToSeconds(flat[i + 1]!, 0) });
    }
    return spans;
  }

  /** Waits for running detections, then frees the weights. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await Promise.allSettled([...this.#inflight]);
      await runNative(() => this.#native.free(), undefined);
    })();
    return this.#closing;
  }
}

/**
 * whisper.cpp's built-in Silero VAD over 16 kHz mono samples in one call, with the ggml weights at
 * `vadModelPath` (whisper.cpp's ggml form of Silero, e.g. silero-v6.2.0-ggml.bin), loaded for this call and
 * freed after. Spans in seconds.
 */
export async function detectSpeechWhisperVad(
  pcm: Float32Array,
  vadModelPath: string,
  opts: WhisperVadOptions = {},
  run: RunOptions = {},
): Promise<Array<{ start: number; end: number }>> {
  checkPcm(pcm);
  vadParams(opts);
  const vad = await WhisperVadModel.load(vadModelPath, { threads: opts.threads }, run);
  try {
    return await vad.detect(pcm, opts, run);
  } finally {
    await vad.close();
  }
}
