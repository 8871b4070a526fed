/**
 * Measures decodeStream on long media: wall time and peak RSS while streaming hours of audio, against
 * decodeToPcm holding it all. A measurement to run by hand, not a test:
 *
 *   node engine/decode/measure-memory.ts [hours=2]
 *
 * It makes a FLAC of `hours` of a 440 Hz tone with the system ffmpeg in a temp folder, then decodes it from a
 * Readable (stdin path) with a consumer that only counts samples.
 */

import { execFileSync } from 'node:child_process';
import { createReadStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeStream, decodeToPcm, SAMPLE_RATE } from './index.ts';

const hours = Number(process.argv[2] ?? 2);
const dir = mkdtempSync(join(tmpdir(), 'decode-measure-'));
const file = join(dir, 'long.flac');
try {
  const seconds = Math.round(hours * 3600);
  execFileSync('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-nostdin', '-f', 'lavfi'],
    ...['-i', `sine=frequency=440:sample_rate=16000:duration=${seconds}`, '-c:a', 'flac', file],
  ]);

  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  const mib = (n: number) => `${(n / 2 ** 20).toFixed(0)} MiB`;

  const base = process.memoryUsage().rss;
  let t0 = performance.now();
  let samples = 0;
  for await (const chunk of decodeStream(createReadStream(file), { maxDurationSec: seconds + 60 })) {
    samples += chunk.length;
  }
  const streamMs = performance.now() - t0;
  const streamPeak = peak;
  console.log(
    `decodeStream: ${(samples / SAMPLE_RATE / 3600).toFixed(2)} h in ${(streamMs / 1000).toFixed(1)} s ` +
      `(${Math.round(samples / SAMPLE_RATE / (streamMs / 1000))}× realtime), ` +
      `RSS ${mib(base)} → peak ${mib(streamPeak)}`,
  );

  peak = process.memoryUsage().rss;
  t0 = performance.now();
  const pcm = await decodeToPcm(createReadStream(file), { maxDurationSec: seconds + 60 });
  const wholeMs = performance.now() - t0;
  console.log(
    `decodeToPcm:  ${(pcm.length / SAMPLE_RATE / 3600).toFixed(2)} h in ${(wholeMs / 1000).toFixed(1)} s, ` +
      `peak RSS ${mib(peak)} (the PCM alone is ${mib(pcm.byteLength)})`,
  );
  clearInterval(sampler);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
