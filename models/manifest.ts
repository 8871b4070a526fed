/**
 * The model manifest: every model name the project knows, what file it is, how big, its sha256 and where it
 * comes from. Real entries are whisper.cpp's official ggml files; synthetic entries are random-weight models
 * of a real shape that `synthetic.ts` writes (for tests and CPU benchmarks, since no weights can be
 * downloaded on the development machines).
 *
 * Provenance of the numbers:
 * - bytes + sha256 of tiny, tiny.en, base, base.en, large-v3 and large-v3-turbo are the published values
 *   recorded in the shared test fixtures' README (each found identical in several independent public projects).
 * - small and medium: no sha256 could be established from a reliable source here, so `sha256` is null; the
 *   SHA-1 that whisper.cpp's models/README.md (v1.9.1, in node_modules/nodejs-whisper) publishes is checked
 *   instead. Their `bytes` are computed from the ggml layout in `synthetic.ts` (`planModel`), the same
 *   computation that reproduces the published sizes of tiny, base, large-v3 and large-v3-turbo exactly (a
 *   test checks this).
 * - Quantized files (`large-v3-turbo-q5_0`, …): `bytes` computed from the f16 layout as whisper.cpp's
 *   quantizer rewrites it (models/quantize.ts; a test checks the computation against the quantizer's output
 *   on the synthetic models, and the tiny.en/base.en sizes follow from their published f16 sizes). A SHA-1
 *   where that README publishes one (large-v3-q5_0, large-v3-turbo-q5_0); elsewhere none, so the resolver
 *   checks the size only and says so.
 */

/** whisper.cpp's ggml hyper-parameters, in the order the file header stores them (ftype follows). */
export interface WhisperHparams {
  nVocab: number;
  nAudioCtx: number;
  nAudioState: number;
  nAudioHead: number;
  nAudioLayer: number;
  nTextCtx: number;
  nTextState: number;
  nTextHead: number;
  nTextLayer: number;
  nMels: 80 | 128;
}

/** The quantization types `transcribe-model quantize` makes (whisper.cpp's quantizer's names). */
export type QuantType = 'q8_0' | 'q5_0' | 'q5_1' | 'q4_0';

export interface RealModelEntry {
  kind: 'real';
  name: string;
  file: string;
  /** Exact file size; `bytesVerified` says whether it is a published fact or computed from the layout. */
  bytes: number;
  bytesVerified: boolean;
  /** null where no sum could be established from a reliable source (never guessed). */
  sha256: string | null;
  /**
   * The SHA-1 whisper.cpp's models/README.md publishes for the file, where it does and no sha256 is known;
   * checked like the sha256. null: none published.
   */
  sha1: string | null;
  url: string;
  hparams: WhisperHparams;
  /** The weights' quantization; absent for the f16 files. */
  quant?: QuantType;
}

export type SyntheticName = 'synthetic-micro' | 'synthetic-tiny' | 'synthetic-base' | 'synthetic-large-v3';
/** A synthetic model quantized locally, on first use, by whisper.cpp's quantizer (models/quantize.ts). */
export type QuantizedSyntheticName = `${Exclude<SyntheticName, 'synthetic-large-v3'>}-${QuantType}`;

export interface SyntheticModelEntry {
  kind: 'synthetic';
  name: SyntheticName | QuantizedSyntheticName;
  /**
   * Set for a quantized synthetic model: the f16 synthetic model it is made from, and the type. Its bytes
   * are computed from the layout (models/quantize.ts) and checked against the quantizer's output by a test;
   * no sha256 is pinned (the quantizer's rounding is ggml's, built for this machine).
   */
  quant?: { from: SyntheticName; type: QuantType };
  file: string;
  /**
   * The real model whose shape (hparams, mel filters, vocabulary) this one copies; `micro` is no
   * published model (see HPARAMS).
   */
  shapeOf: string;
  hparams: WhisperHparams;
  /** Size of the generated file (equal to the real model's). */
  bytes: number;
  /**
   * sha256 of the file generated with the default seed 0 (what resolveModel puts in the cache). Recorded from
   * the generator and pinned by a test: a change here changes every parity baseline made with the model.
   */
  sha256Seed0: string | null;
}

export type ManifestEntry = RealModelEntry | SyntheticModelEntry;

export const DEFAULT_MODEL = 'large-v3';

const HF_BASE = 'https://huggingface.co/ggerganov/whisper.cpp/resolve/main/';

function hp(
  nVocab: number,
  state: number,
  heads: number,
  audioLayers: number,
  textLayers: number,
  nMels: 80 | 128,
): WhisperHparams {
  return {
    nVocab,
    nAudioCtx: 1500,
    nAudioState: state,
    nAudioHead: heads,
    nAudioLayer: audioLayers,
    nTextCtx: 448,
    nTextState: state,
    nTextHead: heads,
    nTextLayer: textLayers,
    nMels,
  };
}

// Multilingual models have 51865 tokens; English-only 51864; large-v3 added one language (Cantonese): 51866.
const HPARAMS = {
  tiny: hp(51865, 384, 6, 4, 4, 80),
  'tiny.en': hp(51864, 384, 6, 4, 4, 80),
  base: hp(51865, 512, 8, 6, 6, 80),
  'base.en': hp(51864, 512, 8, 6, 6, 80),
  small: hp(51865, 768, 12, 12, 12, 80),
  medium: hp(51865, 1024, 16, 24, 24, 80),
  'large-v3': hp(51866, 1280, 20, 32, 32, 128),
  'large-v3-turbo': hp(51866, 1280, 20, 32, 4, 128),
  // No published model: tiny's layers, heads, vocabulary and mels at a quarter of its width (96), so
  // whisper.cpp runs every stage (it types it tiny, and tiny's DTW heads exist) at about a seventh of
  // tiny's encoder cost. For tests that check plumbing (queues, routes, pages, the CLI), never for
  // parity or batching claims, which run on real shapes.
  micro: hp(51865, 96, 6, 4, 4, 80),
} as const satisfies Record<string, WhisperHparams>;

function real(
  name: keyof typeof HPARAMS,
  bytes: number,
  sha256: string | null,
  bytesVerified = true,
  sha1: string | null = null,
): RealModelEntry {
  const file = `ggml-${name}.bin`;
  return { kind: 'real', name, file, bytes, bytesVerified, sha256, sha1, url: HF_BASE + file, hparams: HPARAMS[name] };
}

/**
 * A published quantized file of `shape`: `ggml-<shape>-<type>.bin` on the same Hugging Face repository.
 * Its bytes are computed from the layout (models/quantize.ts, checked against the quantizer's output by a
 * test); a SHA-1 where whisper.cpp's models/README.md publishes one, else null (size-checked only).
 */
function quantized(shape: keyof typeof HPARAMS, type: QuantType, bytes: number, sha1: string | null): RealModelEntry {
  const name = `${shape}-${type}`;
  const file = `ggml-${name}.bin`;
  return {
    kind: 'real',
    name,
    file,
    bytes,
    bytesVerified: false,
    sha256: null,
    sha1,
    url: HF_BASE + file,
    hparams: HPARAMS[shape],
    quant: type,
  };
}

function synthetic(
  name: SyntheticName,
  shapeOf: keyof typeof HPARAMS,
  bytes: number,
  sha256Seed0: string,
): SyntheticModelEntry {
  return { kind: 'synthetic', name, file: `ggml-${name}.bin`, shapeOf, hparams: HPARAMS[shapeOf], bytes, sha256Seed0 };
}

function syntheticQuantized(
  from: Exclude<SyntheticName, 'synthetic-large-v3'>,
  shapeOf: keyof typeof HPARAMS,
  type: QuantType,
  bytes: number,
): SyntheticModelEntry {
  const name: QuantizedSyntheticName = `${from}-${type}`;
  const file = `ggml-${name}.bin`;
  return {
    kind: 'synthetic',
    name,
    file,
    shapeOf,
    hparams: HPARAMS[shapeOf],
    bytes,
    sha256Seed0: null,
    quant: { from, type },
  };
}

export const MANIFEST: readonly ManifestEntry[] = Object.freeze([
  real('tiny', 77691713, 'be07e048e1e599ad46341c8d2a135645097a538221678b7acdd1b1919c6e1b21'),
  real('tiny.en', 77704715, '921e4cf8686fdd993dcd081a5da5b6c365bfde1162e72b08d75ac75289920b1f'),
  real('base', 147951465, '60ed5bc3dd14eea856493d334349b405782ddcaf0028d4b5df4088345fba2efe'),
  real('base.en', 147964211, 'a03779c86df3323075f5e796cb2ce5029f00ec8869eee3fdfb897afe36c6d002'),
  // sha256 unknown here (see the header comment); bytes computed from the layout, not published; the SHA-1
  // is whisper.cpp's models/README.md's.
  real('small', 487601967, null, false, '55356645c2b361a969dfd0ef2c5a50d530afd8d5'),
  real('medium', 1533763059, null, false, 'fd9727b6e1217c2f614f9b698455c4ffd82463b4'),
  real('large-v3', 3095033483, '64d182b440b98d5203c4f9bd541544d84c605196c4f7b845dfa11fb23594d1e2'),
  real('large-v3-turbo', 1624555275, '1fc70f774d38eb169993ac391eea357ef47c88757ef72ee5943879b7e8e2bc69'),
  // The quantized files whisper.cpp's models/download-ggml-model.sh offers (v1.9.1), for the shapes above.
  quantized('tiny', 'q5_1', 32152673, null),
  quantized('tiny', 'q8_0', 43537433, null),
  quantized('tiny.en', 'q5_1', 32166155, null),
  quantized('base', 'q5_1', 59707625, null),
  quantized('base', 'q8_0', 81768585, null),
  quantized('base.en', 'q5_1', 59721011, null),
  quantized('small', 'q5_1', 190085487, null),
  quantized('small', 'q8_0', 264464607, null),
  quantized('medium', 'q5_0', 539212467, null),
  quantized('medium', 'q8_0', 823369779, null),
  quantized('large-v3', 'q5_0', 1081140203, 'e6e2ed78495d403bef4b7cff42ef4aaadcfea8de'),
  quantized('large-v3-turbo', 'q5_0', 574041195, 'e050f7970618a659205450ad97eb95a18d69c9ee'),
  quantized('large-v3-turbo', 'q8_0', 874188075, null),
  synthetic('synthetic-micro', 'micro', 13499393, 'bb3c76f82d61a713831205238b1cfb29913af36cf5f4d9dc0ac624a7c1a209fa'),
  synthetic('synthetic-tiny', 'tiny', 77691713, 'f28fcfa6cb459fe201b58a918e478e50277bff0f9930a3499c5d8fbeac354f73'),
  synthetic('synthetic-base', 'base', 147951465, 'f4e39706cfd5b431b2d0b47f4e71b050d0ee0fe48417446816761715381043fa'),
  // Pinned from `node scripts/synthetic-model.ts synthetic-large-v3` (3.1 GB, not generated in tests).
  synthetic(
    'synthetic-large-v3',
    'large-v3',
    3095033483,
    '047367afe61a7d5fece7a0bde6b119ac8237c90d3af27f4804f5d5c42c9676bc',
  ),
  syntheticQuantized('synthetic-micro', 'micro', 'q8_0', 7863863),
  syntheticQuantized('synthetic-micro', 'micro', 'q5_0', 5609651),
  syntheticQuantized('synthetic-micro', 'micro', 'q5_1', 5985353),
  syntheticQuantized('synthetic-micro', 'micro', 'q4_0', 4858247),
  syntheticQuantized('synthetic-tiny', 'tiny', 'q8_0', 43537433),
  syntheticQuantized('synthetic-tiny', 'tiny', 'q5_0', 29875721),
  syntheticQuantized('synthetic-tiny', 'tiny', 'q5_1', 32152673),
  syntheticQuantized('synthetic-tiny', 'tiny', 'q4_0', 25321817),
  syntheticQuantized('synthetic-base', 'base', 'q8_0', 81768585),
  syntheticQuantized('synthetic-base', 'base', 'q5_0', 55295433),
  syntheticQuantized('synthetic-base', 'base', 'q5_1', 59707625),
  syntheticQuantized('synthetic-base', 'base', 'q4_0', 46471049),
]);

/** The entry for a model name (`ggml-<name>.bin` is accepted too), or undefined. */
export function findModel(name: string): ManifestEntry | undefined {
  return MANIFEST.find((e) => e.name === name || e.file === name);
}
