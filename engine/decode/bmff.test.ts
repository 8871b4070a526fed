import { describe, expect, it } from 'vitest';
import { bmffLayout } from './bmff.ts';

/** A top-level box: 32-bit size, type, zero payload. */
function box(type: string, payloadBytes = 0): Buffer {
  const b = Buffer.alloc(8 + payloadBytes);
  b.writeUInt32BE(8 + payloadBytes, 0);
  b.write(type, 4, 'latin1');
  return b;
}

describe('bmffLayout', () => {
  it('tells index-first from index-last', () => {
    expect(bmffLayout(Buffer.concat([box('ftyp', 24), box('moov', 100), box('mdat', 10)]), false)).toBe('index-first');
    expect(bmffLayout(Buffer.concat([box('ftyp', 24), box('free'), box('mdat', 10)]), false)).toBe('index-last');
    // The mdat header is enough: its payload need not have arrived.
    expect(bmffLayout(Buffer.concat([box('ftyp', 24), box('mdat', 1_000_000).subarray(0, 8)]), false)).toBe(
      'index-last',
    );
  });

  it('asks for more bytes while a box before moov/mdat is incomplete', () => {
    const head = Buffer.concat([box('ftyp', 24), box('free', 100)]);
    expect(bmffLayout(head.subarray(0, 40), false)).toBe('need-more');
    expect(bmffLayout(head.subarray(0, 4), false)).toBe('need-more');
    expect(bmffLayout(head, true)).toBe('unknown');
  });

  it('follows 64-bit box sizes', () => {
    const large = Buffer.alloc(16 + 8);
    large.writeUInt32BE(1, 0);
    large.write('free', 4, 'latin1');
    large.writeBigUInt64BE(24n, 8);
    expect(bmffLayout(Buffer.concat([box('ftyp', 8), large, box('moov')]), false)).toBe('index-first');
  });

  it('says not-bmff for other containers and tiny inputs', () => {
    expect(bmffLayout(Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt '), false)).toBe('not-bmff');
    expect(bmffLayout(Buffer.from('fLaC\x00\x00\x00\x22'), false)).toBe('not-bmff');
    expect(bmffLayout(Buffer.from('ID3'), true)).toBe('not-bmff');
  });

  it('says unknown for impossible sizes rather than looping', () => {
    const zero = box('ftyp', 8);
    zero.writeUInt32BE(0, 0);
    expect(bmffLayout(zero, false)).toBe('unknown');
    const tiny = Buffer.concat([box('ftyp', 8), box('free')]);
    tiny.writeUInt32BE(3, 16);
    expect(bmffLayout(tiny, false)).toBe('unknown');
  });
});
