import { describe, expect, it } from 'vitest';
import { FfmpegLog } from './ffmpeg-log.ts';

// Shaped like ffmpeg 5.1's header dump, cut at awkward places to exercise line reassembly.
const HEADER = `[mov,mp4,m4a,3gp,3g2,mj2 @ 0x55] stream 0, offset 0x30: partial file
Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'pipe:0':
  Metadata:
    major_brand     : isom
  Duration: 01:02:03.50, start: 0.000000, bitrate: N/A
  Stream #0:0[0x1](und): Video: h264 (High), yuv420p, 320x240, 25 fps (default)
  Stream #0:1[0x2](und): Audio: aac (LC) (mp4a / 0x6134706D), 44100 Hz, mono, fltp (default)
Stream mapping:
  Stream #0:1 -> #0:0 (aac (native) -> pcm_f32le (native))
Output #0, f32le, to 'pipe:1':
  Duration: 99:00:00.00
  Stream #0:0(und): Audio: pcm_f32le, 16000 Hz, mono, flt, 512 kb/s (default)
`;

describe('FfmpegLog', () => {
  it('reads format, claimed duration and input streams, whatever the chunking', () => {
    for (const step of [1, 7, 64, HEADER.length]) {
      const durations: Array<number | null> = [];
      let headerDone = 0;
      const log = new FfmpegLog({ onDuration: (d) => durations.push(d), onHeaderDone: () => headerDone++ });
      for (let i = 0; i < HEADER.length; i += step) log.push(HEADER.slice(i, i + step));
      expect(log.format).toBe('mov,mp4,m4a,3gp,3g2,mj2');
      expect(durations).toEqual([3723.5]);
      expect(log.streams).toEqual({ Video: 1, Audio: 1 });
      expect(log.hasOnlyNonAudio).toBe(false);
      expect(headerDone).toBe(1);
    }
  });

  it('reads N/A durations as null and tells a silent video from a broken index', () => {
    const video = new FfmpegLog();
    video.push("Input #0, matroska,webm, from 'pipe:0':\n  Duration: N/A, start: 0.0\n");
    video.push('  Stream #0:0: Video: h264 (High), yuv420p\n');
    video.end();
    expect(video.durationSec).toBeNull();
    expect(video.hasOnlyNonAudio).toBe(true);
    const broken = new FfmpegLog();
    broken.push("Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'x':\n  Stream #0:0[0x1]: Data: none (default)\n");
    expect(broken.hasOnlyNonAudio).toBe(false);
  });

  it('keeps memory bounded on endless output', () => {
    const log = new FfmpegLog();
    const noise = 'x'.repeat(100_000);
    for (let i = 0; i < 50; i++) log.push(noise);
    log.push('\n[aac @ 0x1] decode error\n');
    expect(log.lastLines().length).toBeLessThanOrEqual(16 * 1024);
    expect(log.lastLines()).toMatch(/decode error$/);
    expect(log.saw(/decode error/)).toBe(true);
  });
});
