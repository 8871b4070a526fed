/**
 * speechSpansOf on real media: the JFK sample's speech and silences (the pauses editing shortens), a
 * video without audio (no speech, so no pauses), and an abort that stops the decode.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JFK_MP3 } from '../../test-support/media.ts';
import { speechSpansOf } from './speech.ts';
import { editSuggestions } from './suggest.ts';
import { makeCounterVideo } from './testing/media.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'speech-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('speechSpansOf', () => {
  it("finds the JFK sample's phrases and the silences between them", async () => {
    const spans = await speechSpansOf(JFK_MP3);
    expect(spans.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.start).toBeGreaterThanOrEqual(spans[i - 1]!.end);
    // "And so, my fellow Americans," from about 0.3 s, then a silence of most of a second before "ask not".
    expect(spans[0]!.start).toBeLessThan(0.5);
    const s = editSuggestions(
      { language: 'en', duration: 11, segments: [] },
      { pauseOver: 0.8, pauseTo: 0.3, speech: spans },
    );
    expect(s.pauses.some((p) => p.start > 2.2 && p.end < 3.4 && p.from > 0.8)).toBe(true);
  });

  it('answers no speech for a video without audio, and stops when aborted', async () => {
    const silent = join(dir, 'silent.mp4');
    await makeCounterVideo(silent, 1, { audio: false });
    expect(await speechSpansOf(silent)).toEqual([]);
    await expect(speechSpansOf(JFK_MP3, { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'ABORTED' });
  });
});
