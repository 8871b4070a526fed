/**
 * Parity with upstream whisper-cli (parity.test.ts, parity.long.test.ts): its runs, and the
 * comparison of our tokens with its. whisper-cli is upstream's, built from the unpatched source
 * (native/patches/README.md). Not imported by production code.
 */

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { readPcm } from '../../../test-support/ffmpeg.ts';
import { type RawToken, type WhisperModel, whisperCliPath } from '../index.ts';
import { loadWithSeams } from '../testing.ts';
import { parseCliJson } from './whisper-cli.ts';

export interface CliToken {
  text: string;
  offsets?: { from: number; to: number };
  id: number;
  p: number;
  t_dtw: number;
}
export interface CliSegment {
  offsets: { from: number; to: number };
  text: string;
  tokens: CliToken[];
}
export interface CliJson {
  result: { language: string };
  transcription: CliSegment[];
}

/** Both sides: greedy, temperature 0, no fallback, 2 threads. */
export const PARITY_OPTIONS = { threads: 2, beamSize: 1, bestOf: 1, temperature: 0, temperatureIncrement: 0 } as const;

/**
 * whisper-cli's results on one model, one run per file and language (several tests read the same
 * run): the parity options, no flash attention, CPU, DTW with the tiny alignment heads.
 */
export class CliRuns {
  readonly #runs = new Map<string, CliJson>();
  readonly modelPath: string;
  readonly tmp: string;
  constructor(modelPath: string, tmp: string) {
    this.modelPath = modelPath;
    this.tmp = tmp;
  }

  get(wav: string, language = 'en'): CliJson {
    const key = `${language}\0${wav}`;
    let run = this.#runs.get(key);
    if (!run) {
      run = this.#run(wav, language);
      this.#runs.set(key, run);
    }
    return run;
  }

  #run(wav: string, language: string): CliJson {
    const outBase = join(this.tmp, `cli-${Math.random().toString(36).slice(2)}`);
    const args = [
      ...['-m', this.modelPath, '-f', wav, '-t', String(PARITY_OPTIONS.threads), '-l', language],
      ...['-bs', '1', '-bo', '1', '-tp', '0', '-nf', '-nfa', '-ng', '--dtw', 'tiny'],
      ...['-ojf', '-of', outBase, '-np'],
    ];
    const r = spawnSync(whisperCliPath(), args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`whisper-cli failed (${r.status}): ${r.stderr}`);
    return parseCliJson<CliJson>(readFileSync(`${outBase}.json`, 'utf8'));
  }
}

/** How many more bytes `b` needs to end on a whole UTF-8 character (whisper-cli's rule). */
function utf8TrailingBytesNeeded(b: Uint8Array): number {
  let i = b.length - 1;
  while (i >= 0 && (b[i]! & 0xc0) === 0x80) i--;
  if (i < 0) return 0;
  const c = b[i]!;
  const expected =
    (c & 0x80) === 0 ? 1 : (c & 0xe0) === 0xc0 ? 2 : (c & 0xf0) === 0xe0 ? 3 : (c & 0xf8) === 0xf0 ? 4 : 0;
  if (expected === 0) return 0;
  const have = b.length - i;
  return have >= expected ? 0 : expected - have;
}

interface Merged {
  id: number;
  text: string;
  p: number;
  t0: number;
  t1: number;
  tDtw: number;
}

/** Our tokens merged as whisper-cli merges them before writing JSON; times in centiseconds. */
function mergeLikeCli(tokens: RawToken[]): Merged[] {
  const cs = (t: number) => (t < 0 ? -1 : Math.round(t * 100));
  const out: Merged[] = [];
  for (let j = 0; j < tokens.length; ) {
    const first = tokens[j]!;
    let bytes = first.bytes;
    let t1 = first.t1;
    j++;
    while (j < tokens.length && utf8TrailingBytesNeeded(bytes) > 0) {
      const next = tokens[j]!;
      bytes = Buffer.concat([bytes, next.bytes]);
      if (next.t1 >= 0) t1 = next.t1;
      j++;
    }
    out.push({
      id: first.id,
      text: Buffer.from(bytes).toString('utf8'),
      p: first.p,
      t0: cs(first.t0),
      t1: cs(t1),
      tDtw: first.tDtw === undefined ? -1 : cs(first.tDtw),
    });
  }
  return out;
}

/**
 * Transcribes `wav` on `model` with the parity options and expects whisper-cli's language, segments,
 * token ids, texts, token times, DTW times and probabilities (whisper-cli prints 6 significant
 * digits). Returns how many tokens were compared.
 */
export async function expectSameAsCli(model: WhisperModel, cli: CliJson, wav: string, language: string) {
  const ours = await model.transcribe(await readPcm(wav), { language, ...PARITY_OPTIONS, rawTokens: true }, {});
  expect(ours.language).toBe(cli.result.language);
  expect(ours.segments).toHaveLength(cli.transcription.length);
  let nTokens = 0;
  cli.transcription.forEach((cseg, i) => {
    const seg = ours.segments[i]!;
    // Our segments are clamped to the audio (whisper.cpp's last timestamp can point past it);
    // the raw token times below are compared unclamped.
    const endMs = Math.round(ours.duration * 100) * 10; // whisper.cpp times are centiseconds
    expect(Math.round(seg.start * 1000), `segment ${i} start`).toBe(Math.min(cseg.offsets.from, endMs));
    expect(Math.round(seg.end * 1000), `segment ${i} end`).toBe(Math.min(cseg.offsets.to, endMs));
    expect(seg.text).toBe(cseg.text.trim());

    const merged = mergeLikeCli(ours.tokens![i]!);
    expect(merged.map((t) => t.id)).toEqual(cseg.tokens.map((t) => t.id));
    expect(merged.map((t) => t.text)).toEqual(cseg.tokens.map((t) => t.text));
    // whisper-cli writes token times as milliseconds (centiseconds × 10), only when it has both.
    expect(merged.map((t) => (t.t0 >= 0 && t.t1 >= 0 ? [t.t0 * 10, t.t1 * 10] : null))).toEqual(
      cseg.tokens.map((t) => (t.offsets ? [t.offsets.from, t.offsets.to] : null)),
    );
    expect(merged.map((t) => t.tDtw)).toEqual(cseg.tokens.map((t) => t.t_dtw));
    merged.forEach((t, k) => {
      expect(Math.abs(t.p - cseg.tokens[k]!.p)).toBeLessThanOrEqual(1e-5 * t.p);
    });
    nTokens += merged.length;
  });
  return nTokens;
}

/**
 * |DTW time - whisper-cli's| in centiseconds, token by token, over the segments whose tokens match
 * (up to the first that differs), and how many segments that was.
 */
export function dtwDeltas(cli: CliJson, tokens: RawToken[][]): { deltas: number[]; segments: number } {
  const deltas: number[] = [];
  let segments = 0;
  for (; segments < Math.min(cli.transcription.length, tokens.length); segments++) {
    const merged = mergeLikeCli(tokens[segments]!);
    const theirs = cli.transcription[segments]!.tokens;
    if (merged.map((t) => t.id).join() !== theirs.map((t) => t.id).join()) break; // decoding diverged
    merged.forEach((t, k) => {
      if (theirs[k]!.t_dtw >= 0) deltas.push(Math.abs(t.tDtw - theirs[k]!.t_dtw));
    });
  }
  return { deltas, segments };
}

/** Whisper.cpp's special tokens print as [_NAME_]; every other token is text and gets a DTW time. */
export const isTextToken = (t: RawToken) => !/^\[_[A-Z0-9_]+\]$/.test(t.text);

/**
 * A flash-attention model whose batched graphs attend without flash attention (testFault
 * 'plain-attention': batched encoder and per-call steps), so it decodes whisper-cli's non-flash tokens
 * while its caches keep flash attention's layout, which is what the DTW pass under flash attention
 * (native/patches/0006) reads. DTW with the tiny alignment heads.
 */
export function plainAttentionModel(modelPath: string): Promise<WhisperModel> {
  return loadWithSeams(
    modelPath,
    {
      useGpu: false,
      flashAttn: true,
      dtw: 'tiny',
      batchSize: 2,
      encodeBatch: 2,
      batchAttention: 'per-call',
      selfCheck: false,
    },
    {},
    { testFault: 'plain-attention' },
  );
}
