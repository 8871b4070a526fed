/**
 * Turns whisper.cpp's per-token output (ids, bytes, centisecond times) into words and segments
 * in seconds, and into raw tokens for callers that ask for them. Pure functions over the addon's raw
 * result, so the rules are testable without a model.
 *
 * Rules: tokens with id ≥ eot are special (timestamps, language, task) and never part of a word;
 * a token whose bytes start with a space begins a new word, any other token continues the
 * current one (punctuation, sub-words, the tail bytes of a multi-byte character). A word's text
 * is decoded from the concatenated bytes, so a character split across tokens comes out whole.
 */

import type { Segment, Word } from '../types.ts';
import type { RawToken } from './types.ts';

/** The flat token arrays the addon returns for one job. */
export interface NativeTokens {
  count: number;
  id: Int32Array;
  p: Float32Array;
  /** Centiseconds; -1 where whisper.cpp computed none. */
  t0: Int32Array;
  t1: Int32Array;
  tDtw: Int32Array;
  /** All tokens' bytes back to back; token i is bytes[byteOffsets[i] .. byteOffsets[i+1]). */
  bytes: Uint8Array;
  byteOffsets: Uint32Array;
}

export interface NativeSegment {
  t0: number;
  t1: number;
  text: string;
  tokenStart: number;
  tokenCount: number;
  noSpeechProb: number;
}

export interface WordTiming {
  /** Token id of whisper's end-of-text; every id at or above it is special. */
  eot: number;
  /** Use DTW times (whisper.cpp `t_dtw`) for word boundaries when present. */
  dtw: boolean;
  /** Seconds added to every time. */
  offset: number;
  /**
   * Length of the audio in centiseconds. whisper.cpp's last timestamp token can point past the
   * end of the samples (seen on short clips); segments and words are clamped to the audio.
   */
  endCs: number;
}

const SPACE = 0x20;
const utf8 = new TextDecoder('utf-8');

/** Centiseconds → seconds (+ offset), rounded to the millisecond so sums don't show float noise. */
export function csToSeconds(cs: number, offset: number): number {
  return Math.round((cs / 100 + offset) * 1000) / 1000;
}

export function tokenBytes(tokens: NativeTokens, i: number): Uint8Array {
  return tokens.bytes.subarray(tokens.byteOffsets[i]!, tokens.byteOffsets[i + 1]!);
}

interface WordDraft {
  first: number;
  last: number;
  parts: Uint8Array[];
  pSum: number;
  n: number;
}

export function buildWords(seg: NativeSegment, tokens: NativeTokens, timing: WordTiming): Word[] {
  const drafts: WordDraft[] = [];
  let cur: WordDraft | undefined;
  for (let i = seg.tokenStart; i < seg.tokenStart + seg.tokenCount; i++) {
    if (tokens.id[i]! >= timing.eot) continue;
    const bytes = tokenBytes(tokens, i);
    if (cur === undefined || bytes[0] === SPACE) {
      cur = { first: i, last: i, parts: [], pSum: 0, n: 0 };
      drafts.push(cur);
    }
    cur.parts.push(bytes);
    cur.pSum += tokens.p[i]!;
    cur.n++;
    cur.last = i;
  }

  const words: Word[] = [];
  for (let w = 0; w < drafts.length; w++) {
    const d = drafts[w]!;
    const text = decode(d.parts).replace(/^ /, '');
    if (text.trim() === '') continue;
    const [start, end] = wordSpan(seg, tokens, timing, d, drafts[w + 1]);
    words.push({
      start: csToSeconds(start, timing.offset),
      end: csToSeconds(end, timing.offset),
      text,
      p: d.pSum / d.n,
    });
  }
  return words;
}

/**
 * DTW gives the moment each token is emitted: a word runs from its first token's moment to the
 * next word's (the segment end for the last word). Without DTW, whisper's token t0/t1 are used.
 * Either way the span is clamped into the segment and never runs backwards.
 */
function wordSpan(
  seg: NativeSegment,
  tokens: NativeTokens,
  timing: WordTiming,
  d: WordDraft,
  next: WordDraft | undefined,
): [number, number] {
  let start: number;
  let end: number;
  const dtwStart = tokens.tDtw[d.first]!;
  if (timing.dtw && dtwStart >= 0) {
    start = dtwStart;
    const dtwNext = next === undefined ? -1 : tokens.tDtw[next.first]!;
    end = dtwNext >= 0 ? dtwNext : seg.t1;
  } else {
    start = tokens.t0[d.first]! >= 0 ? tokens.t0[d.first]! : seg.t0;
    end = tokens.t1[d.last]! >= 0 ? tokens.t1[d.last]! : seg.t1;
  }
  start = Math.min(Math.max(start, seg.t0), seg.t1);
  end = Math.min(Math.max(end, start), seg.t1);
  return [start, end];
}

function decode(parts: Uint8Array[]): string {
  if (parts.length === 1) return utf8.decode(parts[0]);
  let n = 0;
  for (const p of parts) n += p.length;
  const all = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return utf8.decode(all);
}

export function buildSegment(
  seg: NativeSegment,
  tokens: NativeTokens,
  timing: WordTiming,
  withWords: boolean,
  withStats = false,
): Segment {
  const t1 = Math.min(seg.t1, timing.endCs);
  const clamped = { ...seg, t0: Math.min(seg.t0, t1), t1 };
  const out: Segment = {
    start: csToSeconds(clamped.t0, timing.offset),
    end: csToSeconds(clamped.t1, timing.offset),
    text: seg.text.trim(),
  };
  if (withWords) out.words = buildWords(clamped, tokens, timing);
  if (withStats) Object.assign(out, segmentStats(seg, tokens, timing));
  return out;
}

/**
 * The text tokens' ids and their mean log-probability (whisper.cpp's `p` is the sampled token's
 * softmax probability, so ln p is its log-probability; specials, timestamps included, are left
 * out as OpenAI's `tokens` leaves them out of the text).
 */
function segmentStats(
  seg: NativeSegment,
  tokens: NativeTokens,
  timing: WordTiming,
): Required<Pick<Segment, 'tokens' | 'avgLogprob' | 'noSpeechProb'>> {
  const ids: number[] = [];
  let logSum = 0;
  for (let i = seg.tokenStart; i < seg.tokenStart + seg.tokenCount; i++) {
    const id = tokens.id[i]!;
    if (id >= timing.eot) continue;
    ids.push(id);
    logSum += Math.log(Math.max(tokens.p[i]!, Number.MIN_VALUE));
  }
  return { tokens: ids, avgLogprob: ids.length > 0 ? logSum / ids.length : 0, noSpeechProb: seg.noSpeechProb };
}

/** A segment's tokens as they came, specials included (TranscribeOptions.rawTokens), times in seconds + offset. */
export function rawTokens(seg: NativeSegment, t: NativeTokens, offset: number): RawToken[] {
  const out: RawToken[] = [];
  for (let i = seg.tokenStart; i < seg.tokenStart + seg.tokenCount; i++) {
    const bytes = tokenBytes(t, i).slice();
    const tok: RawToken = {
      id: t.id[i]!,
      text: new TextDecoder().decode(bytes),
      bytes,
      p: t.p[i]!,
      t0: t.t0[i]! < 0 ? -1 : csToSeconds(t.t0[i]!, offset),
      t1: t.t1[i]! < 0 ? -1 : csToSeconds(t.t1[i]!, offset),
    };
    if (t.tDtw[i]! >= 0) tok.tDtw = csToSeconds(t.tDtw[i]!, offset);
    out.push(tok);
  }
  return out;
}
