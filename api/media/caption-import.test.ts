/**
 * Transcripts from elsewhere: `transcribe --format json` and OpenAI verbose_json round trips, WebVTT
 * with inline word timestamps, and hostile files refused with 400 CAPTIONS_INVALID and a stable
 * `details.reason` (413 past the byte cap).
 */

import { describe, expect, it } from 'vitest';
import { renderJson } from '../../engine/captions/index.ts';
import type { Transcript } from '../../engine/types.ts';
import { verboseJson } from '../openai/format.ts';
import { MAX_IMPORT_SEGMENTS, parseTranscriptJson } from './caption-import.ts';
import { normalizeCaptions } from './captions.ts';

/** Abutting DTW words, a segment gap, Unicode: the engine's own shape. */
const ENGINE: Transcript = {
  language: 'pt',
  duration: 6.5,
  segments: [
    {
      start: 0.32,
      end: 2.9,
      text: ' Então, meu caro João,',
      words: [
        { start: 0.32, end: 0.9, text: 'Então,', p: 0.91 },
        { start: 0.9, end: 1.31, text: 'meu', p: 0.88 },
        { start: 1.31, end: 1.87, text: 'caro', p: 0.93 },
        { start: 1.87, end: 2.9, text: 'João,', p: 0.7 },
      ],
    },
    {
      start: 3.9,
      end: 6.2,
      text: ' não pergunte.',
      words: [
        { start: 3.9, end: 4.4, text: 'não', p: 0.95 },
        { start: 4.4, end: 6.2, text: 'pergunte.', p: 0.9 },
      ],
    },
  ],
};

const words = (t: { segments: Array<{ words: Array<{ start: number; end: number; text: string }> }> }) =>
  t.segments.map((s) => s.words.map((w) => [w.text, w.start, w.end]));

const reason = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    const e = err as { statusCode?: number; code?: string; details?: { reason?: string } };
    return `${e.statusCode} ${e.code} ${e.details?.reason ?? ''}`.trim();
  }
  return 'accepted';
};

describe('JSON transcripts', () => {
  it('round-trips transcribe --format json: segments, words, language', () => {
    const { transcript, vtt } = normalizeCaptions('json', renderJson(ENGINE));
    expect(transcript.language).toBe('pt');
    expect(transcript.duration).toBe(6.5);
    expect(transcript.segments.map((s) => [s.start, s.end, s.text])).toEqual([
      [0.32, 2.9, 'Então, meu caro João,'],
      [3.9, 6.2, 'não pergunte.'],
    ]);
    expect(words(transcript)).toEqual(ENGINE.segments.map((s) => s.words!.map((w) => [w.text, w.start, w.end])));
    expect(vtt).toMatch(/^WEBVTT\n/);
    expect(vtt).toContain('Então, meu caro João,');
  });

  it('round-trips OpenAI verbose_json with words: a full language name, words into their segments', () => {
    const body = verboseJson(ENGINE, {
      task: 'transcribe',
      format: 'verbose_json',
      granularities: ['word', 'segment'],
      temperature: 0,
    });
    const { transcript } = normalizeCaptions('json', JSON.stringify({ ...body, language: 'portuguese' }));
    expect(transcript.language).toBe('pt');
    expect(words(transcript)).toEqual(ENGINE.segments.map((s) => s.words!.map((w) => [w.text, w.start, w.end])));
    // Words alone (timestamp_granularities=[word]): cues of their own, broken at sentence ends and gaps.
    const onlyWords = verboseJson(ENGINE, {
      task: 'transcribe',
      format: 'verbose_json',
      granularities: ['word'],
      temperature: 0,
    });
    const alone = normalizeCaptions('json', JSON.stringify({ ...onlyWords, language: 'english' })).transcript;
    expect(alone.language).toBe('en');
    expect(alone.segments.map((s) => s.text)).toEqual(['Então, meu caro João, não pergunte.']);
    expect(alone.segments[0]!.words).toHaveLength(6);
  });

  it('refuses hostile files with a stable reason', () => {
    const ours = (segments: unknown) => JSON.stringify({ language: 'en', duration: 10, segments });
    const seg = (start: unknown, end: unknown, extra = {}) => ({ start, end, text: 'x', ...extra });
    expect(reason(() => parseTranscriptJson('{"segments": ['))).toBe('400 CAPTIONS_INVALID JSON_SYNTAX');
    expect(reason(() => parseTranscriptJson('[1, 2]'))).toBe('400 CAPTIONS_INVALID SHAPE');
    expect(reason(() => parseTranscriptJson('{"text": "hi"}'))).toBe('400 CAPTIONS_INVALID SHAPE');
    expect(reason(() => parseTranscriptJson(ours([seg('NaN', 1)])))).toBe('400 CAPTIONS_INVALID TIME_INVALID');
    // 1e999 parses as Infinity.
    expect(reason(() => parseTranscriptJson('{"segments":[{"start":0,"end":1e999,"text":"x"}]}'))).toBe(
      '400 CAPTIONS_INVALID TIME_INVALID',
    );
    expect(reason(() => parseTranscriptJson(ours([seg(-1, 1)])))).toBe('400 CAPTIONS_INVALID TIME_INVALID');
    expect(reason(() => parseTranscriptJson(ours([seg(2, 1)])))).toBe('400 CAPTIONS_INVALID TIME_INVALID');
    expect(reason(() => parseTranscriptJson(ours([seg(0, 1e9)])))).toBe('400 CAPTIONS_INVALID TIME_INVALID');
    expect(reason(() => parseTranscriptJson(ours([seg(5, 6), seg(1, 2)])))).toBe('400 CAPTIONS_INVALID OUT_OF_ORDER');
    const backwards = [seg(0, 5, { words: [seg(2, 3), seg(1, 2)] })];
    expect(reason(() => parseTranscriptJson(ours(backwards)))).toBe('400 CAPTIONS_INVALID OUT_OF_ORDER');
    expect(reason(() => parseTranscriptJson(ours([seg(0, 1, { words: [{ start: 0, end: 1, text: 7 }] })])))).toBe(
      '400 CAPTIONS_INVALID SHAPE',
    );
    expect(reason(() => parseTranscriptJson(ours([seg(0, 1, { text: 'x'.repeat(10_001) })])))).toBe(
      '400 CAPTIONS_INVALID TEXT_TOO_LONG',
    );
    expect(reason(() => parseTranscriptJson(ours([])))).toBe('400 CAPTIONS_INVALID EMPTY');
    const many = Array.from({ length: MAX_IMPORT_SEGMENTS + 1 }, (_, i) => seg(i, i + 1));
    expect(reason(() => parseTranscriptJson(ours(many)))).toBe('400 CAPTIONS_INVALID TOO_MANY_SEGMENTS');
    const manyWords = Array.from({ length: 200_001 }, () => ({ word: 'a', start: 0, end: 0 }));
    expect(reason(() => parseTranscriptJson(JSON.stringify({ task: 'transcribe', words: manyWords })))).toBe(
      '400 CAPTIONS_INVALID TOO_MANY_WORDS',
    );
    expect(reason(() => normalizeCaptions('json', ' '.repeat(1024 * 1024 + 1)))).toBe('413 PAYLOAD_TOO_LARGE');
  });
});

describe('WebVTT with inline word timestamps', () => {
  it('keeps the words; a cue without timestamps stays a cue', () => {
    const vtt = [
      'WEBVTT',
      '',
      '00:00:00.320 --> 00:00:02.900',
      'And <00:00:00.700>so, <00:00:01.100><c>my</c> <00:00:01.300>fellow <00:00:01.900>Americans,',
      '',
      '00:00:03.900 --> 00:00:07.500',
      'ask not what your country can do for you,',
      '',
    ].join('\n');
    const { transcript } = normalizeCaptions('vtt', vtt);
    expect(words(transcript)).toEqual([
      [
        ['And', 0.32, 0.7],
        ['so,', 0.7, 1.1],
        ['my', 1.1, 1.3],
        ['fellow', 1.3, 1.9],
        ['Americans,', 1.9, 2.9],
      ],
      [],
    ]);
    expect(transcript.segments[0]!.text).toBe('And so, my fellow Americans,');
    const backwards = 'WEBVTT\n\n00:00:01.000 --> 00:00:03.000\nA <00:00:02.500>b <00:00:02.000>c\n';
    expect(reason(() => normalizeCaptions('vtt', backwards))).toMatch(/^400 CAPTIONS_INVALID/);
  });
});
