/**
 * `verbose_json` carries every field the official `openai` client declares for it: the field
 * lists are read from the client's own type declarations (node_modules/openai), so a field the
 * client adds in an update shows up here as a failure, not as an `undefined` in someone's code.
 */

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Transcript } from '../../engine/types.ts';
import { verboseJson } from './format.ts';

// The client's package exports no package.json; its declarations sit where npm put them.
const TYPES = readFileSync(
  new URL('../../node_modules/openai/resources/audio/transcriptions.d.ts', import.meta.url),
  'utf8',
);

/** The fields an `export interface NAME {…}` declares (its own, at the first level). */
function declaredFields(name: string): { required: string[]; optional: string[] } {
  const start = TYPES.indexOf(`export interface ${name} {`);
  expect(start, name).toBeGreaterThan(-1);
  let depth = 0;
  let end = start;
  for (let i = TYPES.indexOf('{', start); i < TYPES.length; i++) {
    if (TYPES[i] === '{') depth++;
    if (TYPES[i] === '}' && --depth === 0) {
      end = i;
      break;
    }
  }
  const body = TYPES.slice(TYPES.indexOf('{', start) + 1, end);
  const required: string[] = [];
  const optional: string[] = [];
  for (const m of body.matchAll(/^ {4}([a-z_]+)(\??):/gm)) (m[2] ? optional : required).push(m[1]!);
  return { required, optional };
}

const transcript: Transcript = {
  language: 'en',
  duration: 3.2,
  segments: [
    {
      start: 0.5,
      end: 2.25,
      text: 'Ask not.',
      words: [{ start: 0.5, end: 1, text: 'Ask', p: 0.9 }],
      tokens: [1, 2],
      avgLogprob: -0.2,
      noSpeechProb: 0.01,
    },
  ],
};

describe('verbose_json against the openai client’s declared types', () => {
  const body = verboseJson(transcript, {
    task: 'transcribe',
    format: 'verbose_json',
    granularities: ['word', 'segment'],
    temperature: 0,
  }) as Record<string, unknown>;

  it('has every field of TranscriptionVerbose', () => {
    const { required, optional } = declaredFields('TranscriptionVerbose');
    expect(required.length).toBeGreaterThan(0);
    for (const f of [...required, ...optional]) expect(body, f).toHaveProperty(f);
  });

  it('gives each segment every field of TranscriptionSegment, seek among them', () => {
    const { required, optional } = declaredFields('TranscriptionSegment');
    expect(required).toContain('seek');
    const segment = (body.segments as Array<Record<string, unknown>>)[0]!;
    expect(Object.keys(segment).sort()).toEqual([...required, ...optional].sort());
    expect(segment.seek).toBe(50);
  });

  it('gives each word every field of TranscriptionWord', () => {
    const { required } = declaredFields('TranscriptionWord');
    const word = (body.words as Array<Record<string, unknown>>)[0]!;
    expect(Object.keys(word).sort()).toEqual([...required].sort());
  });
});
