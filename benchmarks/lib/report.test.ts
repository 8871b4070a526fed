/**
 * lib/report.ts: a run's README starts with the command, the machine's specs and its load (the load
 * averages against its cores, free memory), never with who else was on the machine.
 */
import { describe, expect, it } from 'vitest';
import { load, machine, runReadme } from './report.ts';

describe('runReadme', () => {
  it('describes the machine by its specs and its load', () => {
    const m = { cpu: 'AMD EPYC', cores: 2, memoryGiB: 23.5, os: 'linux 6.18 x64', node: 'v24.21.0' };
    const text = runReadme('edit-render-2026-11-28', m, { loadavg: [7.5, 6.25, 5], cores: 2, freeMemoryGiB: 12.3 });
    expect(text.split('\n')[0]).toBe('# edit-render-2026-11-28');
    expect(text).toContain('node_modules/.bin/node ');
    expect(text).toContain('AMD EPYC, 2 cores, 23.5 GiB memory; linux 6.18 x64; Node v24.21.0.');
    expect(text).toContain('load average 7.5 / 6.25 / 5 (1 / 5 / 15 min) on 2 cores, 12.3 GiB memory free');
  });

  it('reads this machine', () => {
    const l = load();
    expect(l.loadavg).toHaveLength(3);
    expect(l.cores).toBe(machine().cores);
    expect(l.freeMemoryGiB).toBeGreaterThan(0);
  });
});
