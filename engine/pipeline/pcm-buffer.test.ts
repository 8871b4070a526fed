import { describe, expect, it } from 'vitest';
import { PcmBuffer } from './pcm-buffer.ts';

const ramp = (from: number, n: number) => Float32Array.from({ length: n }, (_, i) => from + i);

describe('PcmBuffer', () => {
  it('slices across chunk boundaries by absolute sample index', () => {
    const b = new PcmBuffer();
    b.push(ramp(0, 5));
    b.push(ramp(5, 3));
    b.push(new Float32Array(0));
    b.push(ramp(8, 4));
    expect(b.end).toBe(12);
    expect([...b.slice(3, 10)]).toEqual([3, 4, 5, 6, 7, 8, 9]);
    expect([...b.slice(5, 8)]).toEqual([5, 6, 7]);
    expect(b.slice(4, 4)).toHaveLength(0);
  });

  it('drops whole chunks before a sample and refuses slices of dropped audio', () => {
    const b = new PcmBuffer();
    b.push(ramp(0, 5));
    b.push(ramp(5, 3));
    b.push(ramp(8, 4));
    b.dropBefore(6); // the chunk [5, 8) is still needed for sample 6
    expect(b.start).toBe(5);
    expect(b.held).toBe(7);
    expect([...b.slice(6, 9)]).toEqual([6, 7, 8]);
    expect(() => b.slice(4, 6)).toThrowError(RangeError);
    expect(() => b.slice(10, 13)).toThrowError(RangeError);
  });

  it('copies what it is given, so the source may reuse its buffer', () => {
    const b = new PcmBuffer();
    const chunk = ramp(0, 4);
    b.push(chunk);
    chunk.fill(-1);
    expect([...b.slice(0, 4)]).toEqual([0, 1, 2, 3]);
  });
});
