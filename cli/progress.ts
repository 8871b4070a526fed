/**
 * A one-line progress bar on stderr when it is a terminal; silent otherwise, so
 * piped output and logs stay clean.
 */
export interface ProgressBar {
  update(label: string, fraction?: number, detail?: string): void;
  done(): void;
}

const WIDTH = 28;

export function createProgressBar(stream: NodeJS.WriteStream = process.stderr): ProgressBar {
  if (!stream.isTTY) return { update() {}, done() {} };
  let last = 0;
  let shown = false;
  return {
    update(label, fraction, detail = '') {
      const now = Date.now();
      if (now - last < 80 && fraction !== 1) return; // a terminal needs no more than ~12 frames a second
      last = now;
      shown = true;
      const f = fraction === undefined ? undefined : Math.min(1, Math.max(0, fraction));
      const bar = f === undefined ? ' '.repeat(WIDTH) : '█'.repeat(Math.round(f * WIDTH)).padEnd(WIDTH, '░');
      const pct = f === undefined ? '    ' : `${String(Math.round(f * 100)).padStart(3)}%`;
      stream.write(`\r\x1b[2K${label.padEnd(8)} ${bar} ${pct} ${detail}`);
    },
    done() {
      if (shown) stream.write('\r\x1b[2K');
      shown = false;
    },
  };
}
