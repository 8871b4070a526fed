/**
 * whisper-cli's `-oj`/`-ojf` JSON as the benchmarks read it. The parser lives beside the parity test's
 * other whisper-cli helpers (engine/asr/testing/whisper-cli.ts); kept out of whisper-timings.ts, whose
 * imports the GPU harness loads where there is no node_modules.
 */
import { parseCliJson as parseWhisperCliJson } from '../../engine/asr/testing/whisper-cli.ts';

export interface CliSegment {
  text: string;
  offsets: { from: number; to: number };
  tokens?: Array<{ id: number; text: string }>;
}

/** whisper-cli's JSON output (control characters written raw inside strings are escaped first). */
export function parseCliJson(raw: string): { transcription: CliSegment[] } {
  return parseWhisperCliJson<{ transcription: CliSegment[] }>(raw);
}
