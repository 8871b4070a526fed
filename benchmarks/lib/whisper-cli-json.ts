/**
 * whisper-cli's `-oj`/`-ojf` JSON as the benchmarks read it. The parser lives beside the parity test's
 * other whisper-cli helpers (engine/asr/test-support.ts), whose imports reach the model resolver and
 * undici: kept out of whisper-timings.ts so the GPU harness runs where there is no node_modules.
 */
import { parseCliJson as parseWhisperCliJson } from '../../engine/asr/test-support.ts';

export interface CliSegment {
  text: string;
  offsets: { from: number; to: number };
  tokens?: Array<{ id: number; text: string }>;
}

/** whisper-cli's JSON output (control characters written raw inside strings are escaped first). */
export function parseCliJson(raw: string): { transcription: CliSegment[] } {
  return parseWhisperCliJson<{ transcription: CliSegment[] }>(raw);
}
