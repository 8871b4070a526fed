/**
 * Captions a caller sends (WebVTT or SRT): checked with the W3C validator's WebVTT parser
 * (SRT is parsed after turning its timing lines into WebVTT ones), then re-rendered by the
 * engine's renderers, so what we store and serve is always well-formed and escaped in both
 * formats, whatever markup the caller's file carried.
 */

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import webvtt from 'webvtt-parser';
import { cleanText, renderSrt, renderVtt } from '../../engine/captions/index.ts';
import type { Transcript } from '../../engine/types.ts';
import { ApiError } from '../errors.ts';
import type { Captions, CaptionTranscript, Storage } from '../storage/types.ts';
import { cutText } from '../text.ts';
import { cueWords, parseTranscriptJson } from './caption-import.ts';

/** What a caller may send: captions, or a transcript as JSON (`transcribe --format json`, OpenAI verbose_json). */
export type CaptionUploadFormat = 'vtt' | 'srt' | 'json';

/** Byte cap on a caption file a caller sends. */
export const MAX_CAPTION_BYTES = 1024 * 1024;
/** Cue cap: a ten-hour talk at one cue per second stays inside it. */
const MAX_CUES = 40_000;

// The parser's built-in table knows only a few entities; the W3C validator hands it the package's full table.
// CommonJS: Node's ESM loader offers only its default export.
const { WebVTTParser } = webvtt;
const htmlEntities = JSON.parse(
  readFileSync(createRequire(import.meta.url).resolve('webvtt-parser/html-entities.json'), 'utf8'),
) as Record<`&${string}`, string>;

interface TreeNode {
  type: string;
  value?: string;
  children?: TreeNode[];
}

const flatten = (nodes: TreeNode[]): string =>
  nodes.map((n) => (n.type === 'text' ? (n.value ?? '') : flatten(n.children ?? []))).join('');

/** SRT → WebVTT text: a header, no counters, `,` → `.` in timing lines. */
function srtToVtt(srt: string): string {
  const blocks = srt
    .replace(/^\uFEFF/, '')
    .replace(/\r\n?/g, '\n')
    .trim()
    .split(/\n{2,}/);
  const out = ['WEBVTT', ''];
  for (const block of blocks) {
    const lines = block.split('\n');
    if (/^\d+$/.test(lines[0]?.trim() ?? '')) lines.shift();
    const timing = lines.shift() ?? '';
    const m = /^(\d+:\d\d:\d\d),(\d{3}) --> (\d+:\d\d:\d\d),(\d{3})$/.exec(timing.trim());
    if (!m)
      throw invalid(`SRT block without a valid timing line: ${JSON.stringify(cutText(timing.toWellFormed(), 80))}`);
    // SRT has no escaping; in WebVTT a bare `&` or an arrow in the text would break the cue.
    const text = lines.map((l) => l.replace(/&(?![a-z]+;|#\d+;|#x[0-9a-f]+;)/gi, '&amp;').replace(/-->/g, '--&gt;'));
    out.push(`${m[1]}.${m[2]} --> ${m[3]}.${m[4]}`, ...text, '');
  }
  return out.join('\n');
}

function invalid(message: string): ApiError {
  return new ApiError(400, 'CAPTIONS_INVALID', message);
}

const finite = (n: unknown, fallback: number) => (typeof n === 'number' && Number.isFinite(n) ? n : fallback);
const ms = (n: number) => Math.round(n * 1000) / 1000;

/**
 * What the read-along keeps of a transcript: cleaned text, words that say something, times in
 * milliseconds that never run backwards inside a word. Word probabilities stay in the engine.
 */
export function storedTranscript(t: Transcript): CaptionTranscript {
  return {
    language: t.language,
    duration: ms(finite(t.duration, 0)),
    segments: t.segments.map((seg) => {
      const start = Math.max(0, finite(seg.start, 0));
      return {
        start: ms(start),
        end: ms(Math.max(start, finite(seg.end, start))),
        text: cleanText(seg.text),
        words: (seg.words ?? [])
          .map((w) => {
            const ws = Math.max(0, finite(w.start, start));
            return { start: ms(ws), end: ms(Math.max(ws, finite(w.end, ws))), text: cleanText(w.text) };
          })
          .filter((w) => w.text !== ''),
      };
    }),
  };
}

/**
 * Validates captions and answers them in both formats, with their transcript: a JSON transcript's
 * segments and words (caption-import.ts); WebVTT or SRT cues as segments, with words where a cue
 * carries inline word timestamps and without otherwise.
 */
export function normalizeCaptions(
  format: CaptionUploadFormat,
  content: string,
): { vtt: string; srt: string; transcript: CaptionTranscript } {
  if (Buffer.byteLength(content) > MAX_CAPTION_BYTES) {
    throw new ApiError(413, 'PAYLOAD_TOO_LARGE', `Captions are capped at ${MAX_CAPTION_BYTES} bytes.`);
  }
  if (format === 'json') {
    const t = parseTranscriptJson(content);
    return { vtt: renderVtt(t), srt: renderSrt(t), transcript: storedTranscript(t) };
  }
  const vttText = format === 'vtt' ? content : srtToVtt(content);
  const { cues, errors } = new WebVTTParser(htmlEntities).parse(vttText, 'subtitles');
  if (errors.length > 0) {
    const e = errors[0]!;
    throw invalid(`Not valid ${format.toUpperCase()}: ${e.message} (line ${e.line}).`);
  }
  if (cues.length === 0) throw invalid('The captions have no cues.');
  if (cues.length > MAX_CUES) throw invalid(`At most ${MAX_CUES} cues.`);
  const transcript: Transcript = {
    language: 'und',
    duration: Math.max(...cues.map((c) => c.endTime)),
    segments: cues.map((c) => ({
      start: c.startTime,
      end: c.endTime,
      text: flatten(c.tree.children as unknown as TreeNode[]),
      words: format === 'vtt' ? cueWords(c) : [],
    })),
  };
  return { vtt: renderVtt(transcript), srt: renderSrt(transcript), transcript: storedTranscript(transcript) };
}

/** The stored transcript as the engine's shape (stored words carry no probability). */
export function engineTranscript(c: CaptionTranscript): Transcript {
  return {
    language: c.language,
    duration: c.duration,
    segments: c.segments.map((s) => ({
      start: s.start,
      end: s.end,
      text: s.text,
      words: s.words.map((w) => ({ start: w.start, end: w.end, text: w.text, p: 1 })),
    })),
  };
}

/**
 * Stored captions' transcript in the engine's shape: the one kept with them, or, for captions
 * stored before transcripts were kept, their cues (segments without words).
 */
export function captionsTranscript(c: Pick<Captions, 'transcript' | 'vtt'>): Transcript {
  return engineTranscript(c.transcript ?? normalizeCaptions('vtt', c.vtt).transcript);
}

/** A video's stored transcript in the engine's shape, or null when it has no captions. */
export async function storedEngineTranscript(storage: Storage, videoId: string): Promise<Transcript | null> {
  const c = await storage.getCaptions(videoId);
  return c ? captionsTranscript(c) : null;
}
