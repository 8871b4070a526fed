/**
 * The models package: manifest, resolver/downloader and synthetic-model generator. Import from here.
 */

export {
  DEFAULT_MODEL,
  findModel,
  MANIFEST,
  type ManifestEntry,
  type QuantizedSyntheticName,
  type QuantType,
  type RealModelEntry,
  type SyntheticModelEntry,
  type SyntheticName,
  type WhisperHparams,
} from './manifest.ts';
export { createProgressBar, type ProgressBar } from './progress.ts';
export {
  defaultQuantizer,
  isQuantType,
  QUANT_FTYPE,
  QUANT_TYPES,
  type QuantizeOptions,
  quantizedBytes,
  quantizeModel,
} from './quantize.ts';
export {
  DEFAULT_CACHE_DIR,
  type DownloadProgress,
  type ResolvedModel,
  type ResolveOptions,
  resolveModel,
} from './resolve.ts';
export {
  type GeneratedModel,
  type GenerateOptions,
  generateSyntheticModel,
  planSyntheticModel,
  writeSyntheticModel,
} from './synthetic.ts';
