/**
 * A one-line terminal progress bar for model downloads and generation. Draws only on a TTY (a pipe or a log
 * file gets nothing, so CI output stays clean) and redraws at most ten times a second.
 */

import type { DownloadProgress } from './resolve.ts';

export interface ProgressBar {
  update(p: DownloadProgress): void;
  /** Clears the line; call once when the work is done or failed. */
  done(): void;
}

export interface ProgressBarOptions {
  stream?: NodeJS.WriteStream;
  label?: string;
  /** Bar width in characters (default 30). */
  width?: number;
}

export function createProgressBar(opts: ProgressBarOptions = {}): ProgressBar {
  const stream = opts.stream ?? process.stderr;
  const label = opts.label ?? 'model';
  const width = opts.width ?? 30;
  let last = 0;
  let drawn = false;
  if (!stream.isTTY) return { update: () => {}, done: () => {} };
  return {
    update(p) {
      const now = Date.now();
      const finished = p.total !== undefined && p.received >= p.total;
      if (!finished && now - last < 100) return;
      last = now;
      stream.write(`\r${renderProgressLine(label, p, width)}\x1b[K`);
      drawn = true;
    },
    done() {
      if (drawn) stream.write('\r\x1b[K');
      drawn = false;
    },
  };
}

/** The text of one frame, e.g. `large-v3 [#######-------]  45%  1.40/3.10 GB`. */
export function renderProgressLine(label: string, p: DownloadProgress, width = 30): string {
  const gb = (n: number) => (n / 1e9).toFixed(2);
  if (p.total === undefined || p.total <= 0) return `${label} ${gb(p.received)} GB`;
  const frac = Math.min(1, Math.max(0, p.received / p.total));
  const fill = Math.round(frac * width);
  const pct = `${Math.floor(frac * 100)}%`.padStart(4);
  return `${label} [${'#'.repeat(fill)}${'-'.repeat(width - fill)}] ${pct}  ${gb(p.received)}/${gb(p.total)} GB`;
}
