/**
 * The documented error codes come from the code: every code the production source raises (found by
 * scanning it, the addon's C++ included) is in its layer's table, every listed code is raised
 * somewhere, and ERRORS.md is what scripts/error-codes.ts renders from those tables today.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERRORS_MD, type Layer, renderErrorsMd, scanSource, TABLES } from './error-codes.ts';

const raised = scanSource();

describe('error codes', () => {
  it.each(Object.keys(TABLES) as Layer[])('%s: every code raised is listed, every code listed is raised', (layer) => {
    const listed = Object.keys(TABLES[layer]).sort();
    const found = [...raised.byLayer[layer].keys()].sort();
    expect(found.filter((c) => !listed.includes(c))).toEqual([]);
    expect(listed.filter((c) => !found.includes(c))).toEqual([]);
  });

  it('the scan sees raises in TypeScript and in the addon', () => {
    // Guards the scan itself: an empty or broken pattern would make the test above pass vacuously.
    expect([...(raised.byLayer.engine.get('ASR_FAILED') ?? [])].some((f) => f.endsWith('.cpp'))).toBe(true);
    expect([...(raised.byLayer.engine.get('SOURCE_ADDRESS_BLOCKED') ?? [])].some((f) => f.endsWith('.ts'))).toBe(true);
    expect(raised.byLayer.queue.get('JOB_NOT_FOUND')?.size).toBeGreaterThan(0);
    expect(raised.apiStatus.get('PAYMENT_REQUIRED')).toEqual(new Set([402]));
  });

  it('no code means two things: the layers share none', () => {
    const all = Object.values(TABLES).flatMap((t) => Object.keys(t));
    expect(all.length).toBe(new Set(all).size);
  });

  it('ERRORS.md is current (regenerate with node scripts/error-codes.ts)', () => {
    expect(readFileSync(ERRORS_MD, 'utf8')).toBe(renderErrorsMd(raised));
  });
});
