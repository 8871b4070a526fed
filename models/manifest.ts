/**
 * The model manifest: every model name the project knows, what file it is, how big, its sha256 and where it
 * comes from. Real entries are whisper.cpp's official ggml files; synthetic entries are random-weight models
 * of a real shape that `synthetic.ts` writes (for tests and CPU benchmarks, since no weights can be
 * downloaded on the development machines).
 *
 * Provenance of the numbers:
 * - bytes + sha256 of tiny, tiny.en, base, base.en, large-v3 and large-v3-turbo are the published values
 *   recorded in the shared test fixtures' README (each found identical in several independent public projects).
 * - small and medium: no sha256 could be established from a reliable source here, so `sha256` is null and the
 *   resolver says it could not verify the sum. Their `bytes` are computed from the ggml layout in
 *   `synthetic.ts` (`planModel`), the same computation that reproduces the published sizes of tiny, base,
 *   large-v3 and large-v3-turbo exactly (a test checks this).
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

export interface RealModelEntry {
  kind: 'real';
  name: string;
  file: string;
  /** Exact file size; `bytesVerified` says whether it is a published fact or computed from the layout. */
  bytes: number;
  bytesVerified: boolean;
  /** null where no sum could be established from a reliable source (never guessed). */
  sha256: string | null;
  url: string;
  hparams: WhisperHparams;
}

export type SyntheticName = 'synthetic-micro' | 'synthetic-tiny' | 'synthetic-base' | 'synthetic-large-v3';

export interface SyntheticModelEntry {
  kind: 'synthetic';
  name: SyntheticName;
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
  sha256Seed0: string;
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

function real(name: keyof typeof HPARAMS, bytes: number, sha256: string | null, bytesVerified = true): RealModelEntry {
  const file = `ggml-${name}.bin`;
  return { kind: 'real', name, file, bytes, bytesVerified, sha256, url: HF_BASE + file, hparams: HPARAMS[name] };
}

function synthetic(
  name: SyntheticName,
  shapeOf: keyof typeof HPARAMS,
  bytes: number,
  sha256Seed0: string,
): SyntheticModelEntry {
  return { kind: 'synthetic', name, file: `ggml-${name}.bin`, shapeOf, hparams: HPARAMS[shapeOf], bytes, sha256Seed0 };
}

export const MANIFEST: readonly ManifestEntry[] = Object.freeze([
  real('tiny', 77691713, 'be07e048e1e599ad46341c8d2a135645097a538221678b7acdd1b1919c6e1b21'),
  real('tiny.en', 77704715, '921e4cf8686fdd993dcd081a5da5b6c365bfde1162e72b08d75ac75289920b1f'),
  real('base', 147951465, '60ed5bc3dd14eea856493d334349b405782ddcaf0028d4b5df4088345fba2efe'),
  real('base.en', 147964211, 'a03779c86df3323075f5e796cb2ce5029f00ec8869eee3fdfb897afe36c6d002'),
  // sha256 unknown here (see the header comment); bytes computed from the layout, not published.
  real('small', 487601967, null, false),
  real('medium', 1533763059, null, false),
  real('large-v3', 3095033483, '64d182b440b98d5203c4f9bd541544d84c605196c4f7b845dfa11fb23594d1e2'),
  real('large-v3-turbo', 1624555275, '1fc70f774d38eb169993ac391eea357ef47c88757ef72ee5943879b7e8e2bc69'),
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
]);

/** The entry for a model name (`ggml-<name>.bin` is accepted too), or undefined. */
export function findModel(name: string): ManifestEntry | undefined {
  return MANIFEST.find((e) => e.name === name || e.file === name);
}
