/**
 * Time-ordered ids (UUID version 7, RFC 9562) for records listed newest first. Lists sort by
 * (created_at, id); PGlite's clock can give two rows the same timestamp, and a v7 id breaks
 * such ties in creation order. Within one millisecond a counter in `rand_a` keeps ids
 * increasing from this process.
 */

import { randomBytes } from 'node:crypto';

let lastMs = 0;
let counter = 0;

export function uuidv7(now = Date.now()): string {
  if (now <= lastMs) {
    counter++;
    // 12 bits of counter: past 4096 ids in one millisecond, borrow the next millisecond.
    if (counter > 0xfff) {
      lastMs++;
      counter = 0;
    }
  } else {
    lastMs = now;
    counter = 0;
  }
  const b = randomBytes(16);
  b.writeUIntBE(lastMs, 0, 6);
  b[6] = 0x70 | (counter >> 8);
  b[7] = counter & 0xff;
  b[8] = 0x80 | (b[8]! & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
