import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createProgressDisplay, formatDuration, progressLine } from './progress.ts';

const stats = { total: 10, skipped: 2, completed: 3, failed: 1, inFlight: 2, audioSec: 7200, elapsedSec: 3600 };

describe('batch progress', () => {
  it('shows items, throughput in audio-hours per hour, and an ETA from this run’s pace', () => {
    // 4 processed in 1 h → 4 remaining take 1 h; 2 audio-hours in 1 h → 2.00 audio-h/h.
    expect(progressLine(stats, 10)).toBe(
      '[######----] 6/10 | ok 3 | failed 1 | skipped 2 | 2.00 audio-h/h | elapsed 1h00m | ETA 1h00m',
    );
    expect(progressLine({ ...stats, completed: 0, failed: 0, audioSec: 0, elapsedSec: 0 }, 10)).toMatch(/ETA --$/);
    expect(formatDuration(59.6)).toBe('1m00s');
    expect(formatDuration(3)).toBe('3s');
  });

  it('redraws one line on a terminal, and writes plain lines elsewhere', () => {
    const tty = Object.assign(new PassThrough(), { isTTY: true });
    let out = '';
    tty.on('data', (d) => {
      out += d;
    });
    const display = createProgressDisplay(tty);
    display.update(stats);
    display.note('failed x: DECODE_FAILED');
    display.end(stats);
    expect(out).toMatch(/^\r\x1b\[2K\[/);
    expect(out).toContain('\r\x1b[2Kfailed x: DECODE_FAILED\n');
    expect(out.endsWith('\n')).toBe(true);

    const log = new PassThrough();
    let text = '';
    log.on('data', (d) => {
      text += d;
    });
    const plain = createProgressDisplay(log, 60_000);
    plain.update(stats);
    plain.update({ ...stats, completed: 4 }); // within the interval: not written
    plain.end({ ...stats, completed: 5 });
    expect(text.split('\n').filter(Boolean)).toHaveLength(2);
    expect(text).not.toContain('\r');
  });
});
