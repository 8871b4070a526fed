/**
 * engine/edit: cutting media by its transcript. The ranges to keep (from the cuts a user made and the
 * ones suggested over the transcript), a render of them through ffmpeg, and the transcript re-timed onto
 * the new file. See README.md beside this file.
 */

export { type EditRequest, type PlannedCuts, planCuts } from './cuts.ts';
export {
  checkInputCount,
  checkInputPixels,
  checkOutputBytes,
  checkOutputSeconds,
  keepWithinContent,
  RENDER_LIMITS,
  type RenderLimits,
  renderLimits,
} from './limits.ts';
export { type EditInput, probeEditInput } from './probe.ts';
export {
  checkKeep,
  DURATION_SLACK_SEC,
  keepFromRemove,
  MAX_KEEP_RANGES,
  mergeRanges,
  subtractRanges,
  type TimeRange,
  totalDuration,
} from './ranges.ts';
export {
  type EditOutputFormat,
  editOutputFormat,
  MAX_RENDER_INPUTS,
  RENDER_DEFAULTS,
  type RenderEditOptions,
  type RenderEditResult,
  type RenderInput,
  renderEdit,
} from './render.ts';
export { retimeTranscript } from './retime.ts';
export { type SpeechSpansOptions, speechSpansOf } from './speech.ts';
export {
  type EditSuggestions,
  editSuggestions,
  FILLER_PROMPTS,
  FILLER_WORDS,
  type FillerCut,
  fillerSupport,
  findFillers,
  isFiller,
  type PauseCut,
  type PauseCutOptions,
  suggestFillerCuts,
  suggestPauseCuts,
} from './suggest.ts';
export { estimateCueWords, hasWordTimes, type IndexedWord, transcriptWords } from './words.ts';
