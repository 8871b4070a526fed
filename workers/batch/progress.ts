/**
 * The batch command's progress line: items done of total, failures, throughput in audio-hours per
 * wall-hour, and an ETA from this run's pace. Redrawn in place on a terminal (at most every 200 ms);
 * elsewhere (CI logs, files) one plain line every `plainEveryMs`.
 */
import type { BatchStats } from './run.ts';

export function formatDuration(sec: number): string {
  if (!Number.isFinite(sec) || sec < 0) return '--';
  const s = Math.round(sec);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  return h > 0 ? `${h}h${String(m).padStart(2, '0')}m` : m > 0 ? `${m}m${String(r).padStart(2, '0')}s` : `${r}s`;
}

export function progressLine(stats: BatchStats, width = 24): string {
  const done = stats.completed + stats.failed + stats.skipped;
  const fraction = stats.total === 0 ? 1 : done / stats.total;
  const filled = Math.round(fraction * width);
  const bar = `${'#'.repeat(filled)}${'-'.repeat(width - filled)}`;
  const processed = stats.completed + stats.failed;
  const remaining = stats.total - done;
  // Pace from this run's own items: skipped ones took no time and would make the ETA a lie.
  const eta = processed > 0 ? (stats.elapsedSec / processed) * remaining : Number.NaN;
  const rate = stats.elapsedSec > 0 ? stats.audioSec / stats.elapsedSec : 0;
  const parts = [
    `[${bar}] ${done}/${stats.total}`,
    `ok ${stats.completed}`,
    `failed ${stats.failed}`,
    `skipped ${stats.skipped}`,
    `${rate.toFixed(2)} audio-h/h`,
    `elapsed ${formatDuration(stats.elapsedSec)}`,
    `ETA ${remaining === 0 ? '0s' : formatDuration(eta)}`,
  ];
  return parts.join(' | ');
}

export interface ProgressDisplay {
  update(stats: BatchStats): void;
  /** Writes a plain line (e.g. a failure) without garbling the bar. */
  note(text: string): void;
  end(stats: BatchStats): void;
}

export function createProgressDisplay(
  stream: NodeJS.WritableStream & { isTTY?: boolean },
  plainEveryMs = 10_000,
): ProgressDisplay {
  const tty = stream.isTTY === true;
  let last = 0;
  let lastLine = '';
  let drawn = false;
  const draw = (stats: BatchStats, force: boolean) => {
    const now = Date.now();
    if (!force && now - last < (tty ? 200 : plainEveryMs)) return;
    const line = progressLine(stats);
    // A log gets no line that says nothing new (the end repeating the last update).
    if (!tty && line === lastLine) return;
    last = now;
    lastLine = line;
    if (tty) {
      stream.write(`\r\x1b[2K${line}`);
      drawn = true;
    } else {
      stream.write(`${line}\n`);
    }
  };
  return {
    update: (stats) => draw(stats, false),
    note(text) {
      if (tty && drawn) stream.write('\r\x1b[2K');
      stream.write(`${text}\n`);
      drawn = false;
    },
    end(stats) {
      draw(stats, true);
      if (tty) stream.write('\n');
    },
  };
}
