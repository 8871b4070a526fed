/**
 * One edit request → the ranges to keep: a person's own cuts checked as given (EDIT_INVALID when out of
 * order, overlapping or outside the media), then the suggestions they asked for added (clamped onto the
 * media: a transcript's end can sit past the container's by codec padding) and everything merged.
 * The CLI, the batch command and the API all cut through this.
 *
 * Pauses are measured on what is left: the person's cuts and the removed fillers are transparent, so
 * the silences on both sides of a struck word join into one pause. The pause cuts come back apart
 * (`pauses`): `retimeTranscript` measures a word without them, so a pause cut shrinks a word, never
 * drops it.
 */

import type { Transcript } from '../types.ts';
import { keepFromRemove, mergeRanges, subtractRanges, type TimeRange } from './ranges.ts';
import { fillerSupport, type PauseCut, suggestFillerCuts, suggestPauseCuts } from './suggest.ts';

export interface EditRequest {
  /** The person's cuts: sorted, disjoint, inside the media. */
  remove?: readonly TimeRange[];
  /** Shorten pauses longer than this many seconds ... */
  shortenPausesOver?: number;
  /** ... to this many (default: the smaller of 0.3 s and half of shortenPausesOver). */
  pauseTo?: number;
  removeFillers?: boolean;
  /** The filler list to use (default: the transcript's language). No list: no filler is cut. */
  language?: string;
  /** The VAD's speech spans: silence is what they leave. Without them, the words' spans stand in. */
  speech?: readonly TimeRange[];
}

export interface PlannedCuts {
  keep: TimeRange[];
  /** Everything removed, merged: the person's cuts and the suggestions. */
  remove: TimeRange[];
  /** The pause cuts among them, as proposed (`from`: the silence, `to`: what stays of it). */
  pauseCuts: PauseCut[];
  /**
   * The silence those cuts remove, less the person's cuts and the fillers (a pause cut can run over a
   * struck word between two silences): pass to retimeTranscript as `pauses`.
   */
  pauses: TimeRange[];
  /** The filler cuts among them. */
  fillers: TimeRange[];
  /** Set when fillers were asked for in a language without a list: why none were cut. */
  fillersUnsupported?: string;
}

export function planCuts(duration: number, transcript: Transcript, req: EditRequest): PlannedCuts {
  const own = req.remove ?? [];
  keepFromRemove(duration, own); // validates the person's ranges as given
  const clamp = <R extends TimeRange>(rs: R[]): R[] =>
    rs
      .map((r) => ({ ...r, start: Math.max(0, r.start), end: Math.min(r.end, duration) }))
      .filter((r) => r.end > r.start);
  const language = req.language ?? transcript.language;
  const support = fillerSupport(language);
  const fillers = req.removeFillers ? clamp(suggestFillerCuts(transcript, { language })) : [];
  const over = req.shortenPausesOver;
  const pauses =
    over === undefined
      ? []
      : clamp(
          suggestPauseCuts(transcript, {
            over,
            to: req.pauseTo ?? Math.min(0.3, over / 2),
            speech: req.speech,
            removed: [...own, ...fillers],
            duration,
          }),
        );
  const span = ({ start, end }: TimeRange) => ({ start, end });
  const remove = mergeRanges([...own, ...pauses, ...fillers].map(span));
  const struck = mergeRanges([...own, ...fillers].map(span));
  return {
    keep: keepFromRemove(duration, remove),
    remove,
    pauseCuts: pauses,
    pauses: subtractRanges(mergeRanges(pauses.map(span)), struck),
    fillers,
    ...(req.removeFillers && !support.supported ? { fillersUnsupported: support.reason } : {}),
  };
}
