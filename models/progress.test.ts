import { afterEach, describe, expect, it, vi } from 'vitest';
import { createProgressBar, renderProgressLine } from './progress.ts';

function fakeStream(isTTY: boolean) {
  const writes: string[] = [];
  const stream = { isTTY, write: (s: string) => writes.push(s) > 0 } as unknown as NodeJS.WriteStream;
  return { stream, writes };
}

describe('progress bar', () => {
  it('renders a bar with percentage and sizes, or just the size when the total is unknown', () => {
    expect(renderProgressLine('tiny', { received: 5e8, total: 1e9 }, 10)).toBe('tiny [#####-----]  50%  0.50/1.00 GB');
    expect(renderProgressLine('tiny', { received: 2e9 }, 10)).toBe('tiny 2.00 GB');
    expect(renderProgressLine('x', { received: 9, total: 3 }, 4)).toBe('x [####] 100%  0.00/0.00 GB');
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('draws on a TTY (a frame per 100 ms, always the final one) and clears the line when done', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { stream, writes } = fakeStream(true);
    const bar = createProgressBar({ stream, label: 'm', width: 4 });
    bar.update({ received: 1, total: 4 });
    vi.advanceTimersByTime(99);
    bar.update({ received: 2, total: 4 }); // 99 ms after the last frame: skipped
    vi.advanceTimersByTime(1);
    bar.update({ received: 3, total: 4 }); // 100 ms: drawn
    bar.update({ received: 4, total: 4 }); // the final frame is never skipped
    bar.done();
    expect(writes).toEqual([
      '\rm [#---]  25%  0.00/0.00 GB\x1b[K',
      '\rm [###-]  75%  0.00/0.00 GB\x1b[K',
      '\rm [####] 100%  0.00/0.00 GB\x1b[K',
      '\r\x1b[K',
    ]);
  });

  it('writes nothing to a pipe or file', () => {
    const { stream, writes } = fakeStream(false);
    const bar = createProgressBar({ stream });
    bar.update({ received: 1, total: 2 });
    bar.done();
    expect(writes).toEqual([]);
  });
});
