/**
 * Caption renderers: golden files from hand-written transcripts, every output checked by independent strict
 * parsers (W3C's webvtt-parser, srt-validator), and a property test over random hostile transcripts.
 */

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as srtModule from 'srt-validator';
import { describe, expect, it } from 'vitest';
import { WebVTTParser } from 'webvtt-parser';
import { rng } from '../../test-support/random.ts';
import type { Segment, Transcript, Word } from '../types.ts';
import { GOLDEN_TRANSCRIPTS } from './golden-transcripts.ts';
import {
  CAPTION_FORMATS,
  CUE_DEFAULTS,
  type Cue,
  cleanText,
  render,
  renderSrt,
  renderVtt,
  splitCues,
  srtTimestamp,
  vttTimestamp,
  widthOf,
} from './index.ts';

interface SrtLib {
  validator: (s: string) => Array<{ message: string; lineNumber: number }>;
  parser: { parse: (s: string) => Array<{ time: { start: number; end: number }; text: string }> };
}
// srt-validator is CommonJS compiled from TypeScript: where its named exports land depends on the loader.
const srt: SrtLib =
  'validator' in srtModule ? (srtModule as unknown as SrtLib) : (srtModule as unknown as { default: SrtLib }).default;

interface ParsedCue {
  start: number;
  end: number;
  text: string;
}

type TreeNode = { type: 'text'; value: string } | { type: 'object'; name: string; children: TreeNode[] };

// The parser's built-in table knows only '&lt' (no semicolon) and turns '&lt;' into '<;'; the W3C validator
// hands it the full HTML entity table that ships with the package, as we do here.
const htmlEntities = JSON.parse(
  readFileSync(createRequire(import.meta.url).resolve('webvtt-parser/html-entities.json'), 'utf8'),
) as Record<`&${string}`, string>;

/** Parses WebVTT with the W3C validator's parser; any error fails the test. Returns cues with decoded text. */
function parseVtt(vtt: string): ParsedCue[] {
  const { cues, errors } = new WebVTTParser(htmlEntities).parse(vtt, 'subtitles');
  expect(errors, `WebVTT errors in:\n${vtt}`).toEqual([]);
  const flatten = (nodes: TreeNode[]): string =>
    nodes
      .map((n) => {
        // Escaped text never yields markup: any tag node means escaping failed.
        expect(n.type).toBe('text');
        return n.type === 'text' ? n.value : flatten(n.children);
      })
      .join('');
  // Parsers add up hours, minutes and seconds in floating point: compare in whole milliseconds.
  return cues.map((c) => ({
    start: Math.round(c.startTime * 1000) / 1000,
    end: Math.round(c.endTime * 1000) / 1000,
    text: flatten(c.tree.children as unknown as TreeNode[]),
  }));
}

const TIMING_LINE = /^(\d+)(:\d\d:\d\d,\d\d\d) --> (\d+)(:\d\d:\d\d,\d\d\d)$/gm;

/**
 * Validates SRT with srt-validator (numbering, timing lines, order) and parses it. SRT has no standard form
 * for 100 hours or more; we write more hour digits, as ffmpeg's SRT muxer does, which srt-validator's
 * two-digit rule rejects. Such a file is validated with each hour number replaced by its rank among the
 * file's hours (order kept, so the validator's order and length checks still bite), and its times are read
 * from the original timing lines.
 */
function parseSrt(text: string): ParsedCue[] {
  if (text === '') return []; // no cues: an empty file (srt-validator wants at least one cue)
  const timings = [...text.matchAll(TIMING_LINE)];
  const hours = [...new Set(timings.flatMap((m) => [Number(m[1]), Number(m[3])]))].sort((a, b) => a - b);
  const rank = (h: string) => String(hours.indexOf(Number(h))).padStart(2, '0');
  const checked =
    hours.at(-1)! >= 100
      ? text.replace(TIMING_LINE, (_, h1, r1, h2, r2) => `${rank(h1)}${r1} --> ${rank(h2)}${r2}`)
      : text;
  expect(srt.validator(checked), `SRT errors in:\n${text}`).toEqual([]);
  const seconds = (h: string, rest: string) => {
    const [, m, sec, ms] = /^:(\d\d):(\d\d),(\d\d\d)$/.exec(rest)!;
    return (Number(h) * 3_600_000 + Number(m) * 60_000 + Number(sec) * 1000 + Number(ms)) / 1000;
  };
  return srt.parser.parse(checked).map((c, i) => {
    const m = timings[i]!;
    return { start: seconds(m[1]!, m[2]!), end: seconds(m[3]!, m[4]!), text: c.text };
  });
}

const srtTextOf = (cue: Cue) => cue.lines.join('\n').replace(/-{2,}>/g, '->');

/**
 * The JSON output read back is the transcript: every segment and word, in order, with its text
 * untouched and its times to the millisecond (probabilities to 1e-4); what is not a finite number
 * comes back null and what is not a string comes back empty, as renderJson documents.
 */
function expectJsonFaithful(out: string, t: Transcript, label: string): void {
  const back = JSON.parse(out) as Transcript;
  const time = (got: unknown, want: unknown, digits = 3) => {
    if (typeof want === 'number' && Number.isFinite(want)) {
      expect(Math.abs((got as number) - want), label).toBeLessThanOrEqual(0.5 * 10 ** -digits + 1e-9);
    } else expect(got, label).toBeNull();
  };
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  expect(back.language, label).toBe(text(t.language));
  time(back.duration, t.duration);
  const segments = Array.isArray(t.segments) ? t.segments : [];
  expect(back.segments.length, label).toBe(segments.length);
  segments.forEach((s, i) => {
    const b = back.segments[i]!;
    expect(b.text, label).toBe(text(s?.text));
    time(b.start, s?.start);
    time(b.end, s?.end);
    if (!Array.isArray(s?.words)) {
      expect(b.words, label).toBeUndefined();
      return;
    }
    expect(b.words?.length, label).toBe(s.words.length);
    s.words.forEach((w, j) => {
      const bw = b.words![j]!;
      expect(bw.text, label).toBe(text(w?.text));
      time(bw.start, w?.start);
      time(bw.end, w?.end);
      time(bw.p, w?.p, 4);
    });
  });
}

describe('golden files', () => {
  for (const [name, transcript] of Object.entries(GOLDEN_TRANSCRIPTS)) {
    for (const format of CAPTION_FORMATS) {
      it(`${name}.${format}`, async () => {
        const out = render(format, transcript);
        await expect(out).toMatchFileSnapshot(`./__golden__/${name}.${format}`);
        if (format === 'vtt') expect(parseVtt(out).length).toBe(splitCues(transcript).length);
        if (format === 'srt') expect(parseSrt(out).length).toBe(splitCues(transcript).length);
        if (format === 'json') expectJsonFaithful(out, transcript, name);
      });
    }
  }
});

describe('timestamps', () => {
  it('formats VTT and SRT times, hours past 99 included', () => {
    expect(vttTimestamp(0)).toBe('00:00:00.000');
    expect(vttTimestamp(3661.5)).toBe('01:01:01.500');
    expect(srtTimestamp(3661.5)).toBe('01:01:01,500');
    expect(vttTimestamp(59.9996)).toBe('00:01:00.000');
    expect(vttTimestamp(360_000)).toBe('100:00:00.000');
    expect(srtTimestamp(3_600_000 + 0.007)).toBe('1000:00:00,007');
  });

  it('parses back exactly, past 100 hours too', () => {
    const t = GOLDEN_TRANSCRIPTS['hundred-hours']!;
    const cues = splitCues(t);
    expect(parseVtt(renderVtt(t)).map((c) => [c.start, c.end])).toEqual(cues.map((c) => [c.start, c.end]));
    expect(cues.at(-1)!.start).toBe(359_999.5);
  });
});

describe('splitCues', () => {
  it('keeps punctuation on its word and balances two lines', () => {
    const cues = splitCues(GOLDEN_TRANSCRIPTS.speech!);
    expect(cues[0]!.lines).toEqual(['And so my fellow Americans, ask not', 'what your country can do for you,']);
  });

  it('honours custom limits', () => {
    const cues = splitCues(GOLDEN_TRANSCRIPTS.speech!, { maxLineChars: 16, maxLines: 1, maxCueSec: 2 });
    for (const c of cues) {
      expect(c.lines).toHaveLength(1);
      expect(widthOf(c.lines[0]!)).toBeLessThanOrEqual(16);
      expect(c.end - c.start).toBeLessThanOrEqual(2);
    }
    expect(cues.map((c) => c.lines[0]).join(' ')).toBe(
      'And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.',
    );
  });

  it('starts a new cue after a long pause', () => {
    const t: Transcript = {
      language: 'en',
      duration: 10,
      segments: [
        {
          start: 0,
          end: 10,
          text: 'before after',
          words: [
            { text: 'before', start: 0, end: 1, p: 1 },
            { text: 'after', start: 9, end: 10, p: 1 },
          ],
        },
      ],
    };
    expect(splitCues(t).map((c) => c.lines.join(' '))).toEqual(['before', 'after']);
  });

  it('rejects nonsense limits with INVALID_OPTIONS', () => {
    expect(() => splitCues(GOLDEN_TRANSCRIPTS.speech!, { maxLineChars: 0 })).toThrowError(
      expect.objectContaining({ code: 'INVALID_OPTIONS' }),
    );
    expect(() => render('docx' as 'vtt', GOLDEN_TRANSCRIPTS.speech!)).toThrowError(
      expect.objectContaining({ code: 'INVALID_OPTIONS' }),
    );
  });
});

// ---- property test -------------------------------------------------------------------------------------

const PIECES = [
  'word',
  'hello',
  'a',
  'I',
  ',',
  '.',
  '?',
  '-->',
  '->',
  '--',
  '>',
  '<',
  '&',
  '&amp;',
  '&lt;',
  '<b>',
  '</i>',
  '<v Bob>',
  '<00:00:01.000>',
  '\n',
  '\n\n',
  '\r\n',
  '\t',
  ' ',
  '\u0000',
  '\u001b[31m',
  '\u2028',
  '\u00a0',
  '\ufeff',
  '\ud800',
  '\udfff',
  '😀',
  '👩‍👩‍👧‍👦',
  'e\u0301',
  'שלום',
  'مرحبا',
  '日本語',
  'こんにちは',
  '世界',
  'NOTE',
  'WEBVTT',
  '00:00:01.000 --> 00:00:02.000',
  '1',
  '',
  'x'.repeat(60),
  '語'.repeat(30),
  'STYLE',
  '::cue',
];

function randomText(r: () => number): string {
  const n = Math.floor(r() * 12);
  let s = '';
  for (let i = 0; i < n; i++) s += (r() < 0.6 ? ' ' : '') + PIECES[Math.floor(r() * PIECES.length)]!;
  return s;
}

function randomTime(r: () => number, around: number): number {
  const x = r();
  if (x < 0.02) return Number.NaN;
  if (x < 0.03) return -5;
  if (x < 0.04) return Number.POSITIVE_INFINITY;
  if (x < 0.05) return around - 3; // backwards
  return around + r() * 4;
}

function randomTranscript(seed: number): Transcript {
  const r = rng(seed);
  const segments: Segment[] = [];
  let t = r() < 0.1 ? 359_990 : 0; // sometimes past 100 hours
  const nSeg = Math.floor(r() * 6);
  for (let i = 0; i < nSeg; i++) {
    const start = randomTime(r, t);
    if (r() < 0.5) {
      const words: Word[] = [];
      const nWords = Math.floor(r() * 25);
      let wt = Number.isFinite(start) ? start : t;
      for (let k = 0; k < nWords; k++) {
        const ws = r() < 0.05 ? randomTime(r, wt) : wt;
        wt = wt + r() * (r() < 0.05 ? 12 : 0.8);
        words.push({ text: randomText(r).slice(0, 20) || 'w', start: ws, end: wt, p: r() });
      }
      segments.push({ start, end: wt, text: words.map((w) => w.text).join(' '), words });
      t = wt;
    } else {
      const end = randomTime(r, Number.isFinite(start) ? start : t);
      segments.push({ start, end, text: randomText(r) });
      if (Number.isFinite(end)) t = Math.max(t, end);
    }
  }
  return { language: 'en', duration: t, segments };
}

/** All the visible characters a transcript should put on screen, in order, whitespace ignored. */
function expectedInk(t: Transcript): string {
  return t.segments
    .map((s) => {
      const words = (s.words ?? []).filter((w) => cleanText(w.text) !== '');
      const timed = words.length > 0 && words.every((w) => Number.isFinite(w.start) && Number.isFinite(w.end));
      return timed ? words.map((w) => cleanText(w.text)).join('') : cleanText(s.text);
    })
    .join('')
    .replace(/\s/g, '');
}

describe('property: any transcript renders to files that strict parsers accept', () => {
  it('holds for 400 random hostile transcripts', () => {
    for (let seed = 1; seed <= 400; seed++) {
      const t = randomTranscript(seed);
      const opts = seed % 3 === 0 ? { maxLineChars: 20, maxLines: 3, maxCueSec: 4 } : {};
      const limits = { ...CUE_DEFAULTS, ...opts };
      const cues = splitCues(t, opts);
      let prevEnd = 0;
      for (const c of cues) {
        const where = `seed ${seed}, cue ${JSON.stringify(c)}`;
        expect(c.end, where).toBeGreaterThan(c.start);
        expect(c.end - c.start, where).toBeLessThanOrEqual(limits.maxCueSec + 1e-9);
        expect(c.start, where).toBeGreaterThanOrEqual(prevEnd);
        expect(c.lines.length, where).toBeGreaterThan(0);
        expect(c.lines.length, where).toBeLessThanOrEqual(limits.maxLines);
        for (const line of c.lines) {
          expect(line.trim(), where).toBe(line);
          expect(line, where).not.toBe('');
          expect(line, where).not.toMatch(/[\n\r\u0000-\u001f]/);
          expect(widthOf(line), where).toBeLessThanOrEqual(limits.maxLineChars);
        }
        prevEnd = c.end;
      }
      // No text lost, added or reordered.
      expect(
        cues
          .map((c) => c.lines.join(''))
          .join('')
          .replace(/\s/g, ''),
        `seed ${seed}`,
      ).toBe(expectedInk(t));

      const vtt = parseVtt(renderVtt(t, opts));
      expect(vtt, `seed ${seed}`).toEqual(cues.map((c) => ({ start: c.start, end: c.end, text: c.lines.join('\n') })));
      const srtCues = parseSrt(renderSrt(t, opts));
      expect(srtCues, `seed ${seed}`).toEqual(cues.map((c) => ({ start: c.start, end: c.end, text: srtTextOf(c) })));
      expectJsonFaithful(render('json', t), t, `seed ${seed}`);
    }
  });
});
