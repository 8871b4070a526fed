/**
 * The OpenAI audio API's answer shapes, as pure functions of a Transcript: `json`, `text`,
 * `verbose_json` (segments with their decoding statistics, words when asked), `srt` and `vtt`
 * (engine/captions' renderers), and the streamed events. No I/O here.
 */

import { deflateSync } from 'node:zlib';
import { renderSrt, renderVtt } from '../../engine/captions/index.ts';
import type { Transcript } from '../../engine/types.ts';

export const RESPONSE_FORMATS = ['json', 'text', 'srt', 'verbose_json', 'vtt'] as const;
export type ResponseFormat = (typeof RESPONSE_FORMATS)[number];
export const GRANULARITIES = ['word', 'segment'] as const;
export type Granularity = (typeof GRANULARITIES)[number];

export interface AnswerOptions {
  task: 'transcribe' | 'translate';
  format: ResponseFormat;
  granularities: readonly Granularity[];
  /** The temperature decoding started at (whisper.cpp does not report a segment's fallback). */
  temperature: number;
}

/** The transcript's text as OpenAI gives it: segment texts joined by one space. */
export function transcriptText(t: Transcript): string {
  return t.segments
    .map((s) => s.text)
    .filter((s) => s !== '')
    .join(' ');
}

/** The piece a segment's text adds to `soFar`, so that the pieces concatenate to transcriptText. */
export function textPiece(text: string, soFar: string): string {
  if (text === '') return '';
  return soFar === '' ? text : ` ${text}`;
}

/**
 * What Python's whisper reports as a segment's compression ratio: UTF-8 length over its zlib
 * length (a repeating hallucination compresses well and scores high).
 */
export function compressionRatio(text: string): number {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length === 0) return 0;
  return bytes.length / deflateSync(bytes).length;
}

function usage(t: Transcript) {
  return { type: 'duration', seconds: Math.ceil(t.duration) };
}

export function verboseJson(t: Transcript, o: AnswerOptions) {
  const body: Record<string, unknown> = {
    task: o.task,
    language: t.language,
    duration: t.duration,
    text: transcriptText(t),
  };
  const wantSegments = o.granularities.length === 0 || o.granularities.includes('segment');
  if (wantSegments) {
    body.segments = t.segments.map((s, id) => ({
      id,
      // Python whisper's seek is the offset, in mel frames (100 a second), of the window the segment
      // came from; our windows follow speech, not a 30 s grid, so it is the segment's own start.
      seek: Math.round(s.start * 100),
      start: s.start,
      end: s.end,
      text: s.text,
      tokens: s.tokens ?? [],
      temperature: o.temperature,
      avg_logprob: s.avgLogprob ?? 0,
      compression_ratio: compressionRatio(s.text),
      no_speech_prob: s.noSpeechProb ?? 0,
    }));
  }
  if (o.granularities.includes('word')) {
    body.words = t.segments.flatMap((s) => (s.words ?? []).map((w) => ({ word: w.text, start: w.start, end: w.end })));
  }
  body.usage = usage(t);
  return body;
}

/** The body and media type for a finished transcription. */
export function answer(t: Transcript, o: AnswerOptions): { type: string; body: string | object } {
  switch (o.format) {
    case 'json':
      return { type: 'application/json; charset=utf-8', body: { text: transcriptText(t), usage: usage(t) } };
    case 'text':
      return { type: 'text/plain; charset=utf-8', body: `${transcriptText(t)}\n` };
    case 'srt':
      return { type: 'application/x-subrip; charset=utf-8', body: renderSrt(t) };
    case 'vtt':
      return { type: 'text/vtt; charset=utf-8', body: renderVtt(t) };
    case 'verbose_json':
      return { type: 'application/json; charset=utf-8', body: verboseJson(t, o) };
  }
}

/** One server-sent event in the shape the `openai` client's stream reader parses (`data:` JSON). */
export function sseEvent(data: object): string {
  return `data: ${JSON.stringify(data)}\n\n`;
}

export function deltaEvent(delta: string): string {
  return sseEvent({ type: 'transcript.text.delta', delta });
}

export function doneEvent(t: Transcript): string {
  return sseEvent({ type: 'transcript.text.done', text: transcriptText(t), usage: usage(t) });
}
