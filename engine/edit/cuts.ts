/**
 * One edit request → the ranges to keep: a person's own cuts checked as given (EDIT_INVALID when out of
 * order, overlapping or outside the media), then the suggestions they asked for added (clamped onto the
 * media: a transcript's end can sit past the container's by codec padding) and everything merged.
 * The CLI, the batch command and the API all cut through this.
 */

import type { Transcript } from '../types.ts';
import { keepFromRemove, mergeRanges, type TimeRange } from './ranges.ts';
import { isFiller, suggestFillerCuts, suggestPauseCuts } from './suggest.ts';

export interface EditRequest {
  /** The person's cuts: sorted, disjoint, inside the media. */
  remove?: readonly TimeRange[];
  /** Shorten pauses longer than this many seconds ... */
  shortenPausesOver?: number;
  /** ... to this many (default: the smaller of 0.3 s and half of shortenPausesOver). */
  pauseTo?: number;
  removeFillers?: boolean;
  /** The filler list to use (default: the transcript's language). */
  language?: string;
  /** The VAD's speech spans, which pause cuts never enter. */
  speech?: readonly TimeRange[];
}

export interface PlannedCuts {
  keep: TimeRange[];
  /** Everything removed, merged: the person's cuts and the suggestions. */
  remove: TimeRange[];
}

export function planCuts(duration: number, transcript: Transcript, req: EditRequest): PlannedCuts {
  const own = req.remove ?? [];
  keepFromRemove(duration, own); // validates the person's ranges as given
  const clamp = (rs: TimeRange[]) =>
    rs.map((r) => ({ start: r.start, end: Math.min(r.end, duration) })).filter((r) => r.end > r.start);
  const over = req.shortenPausesOver;
  // A filler that goes leaves a pause: the words around it are measured as neighbours.
  const spoken = req.removeFillers ? withoutFillers(transcript, req.language) : transcript;
  const pauses =
    over === undefined
      ? []
      : suggestPauseCuts(spoken, { over, to: req.pauseTo ?? Math.min(0.3, over / 2), speech: req.speech });
  const fillers = req.removeFillers ? suggestFillerCuts(transcript, { language: req.language }) : [];
  const remove = mergeRanges([...own, ...clamp(pauses), ...clamp(fillers)]);
  return { keep: keepFromRemove(duration, remove), remove };
}

function withoutFillers(t: Transcript, language = t.language): Transcript {
  return {
    ...t,
    segments: t.segments.map((s) => ({ ...s, words: (s.words ?? []).filter((w) => !isFiller(w.text, language)) })),
  };
}
