/**
 * Reads the top-level box layout of an ISO BMFF file (mp4, m4a, mov, 3gp) from its first bytes.
 *
 * ffmpeg's mov demuxer reads a pipe front to back: when the index (`moov`) comes after the media data
 * (`mdat`), it reaches the index only after the data has streamed past, cannot seek back, and exits 0 with
 * no audio. Walking the box headers tells us which layout we have before ffmpeg starts, so such files are
 * spooled to a seekable temp file and everything else keeps streaming.
 */

/** 'not-bmff': some other container. 'index-first': decodable from a pipe. 'index-last': needs a seekable
 * file. 'unknown': looks like BMFF but the layout could not be established within the sniffed bytes. */
export type BmffLayout = 'not-bmff' | 'index-first' | 'index-last' | 'unknown';

// Box types that may open a QuickTime / ISO BMFF file. `moof`-only fragments are not playable on their own.
const OPENING_BOXES = new Set(['ftyp', 'styp', 'moov', 'mdat', 'free', 'skip', 'wide', 'pnot', 'pdin', 'uuid']);

function boxType(b: Uint8Array, at: number): string {
  return String.fromCharCode(b[at]!, b[at + 1]!, b[at + 2]!, b[at + 3]!);
}

/**
 * Classifies the layout from `head`, the first bytes of the input. Returns 'need-more' while the answer
 * depends on bytes not read yet; `ended` says the input has no more bytes.
 */
export function bmffLayout(head: Uint8Array, ended: boolean): BmffLayout | 'need-more' {
  if (head.length < 8) return ended ? 'not-bmff' : 'need-more';
  if (!OPENING_BOXES.has(boxType(head, 4))) return 'not-bmff';
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  let at = 0;
  while (at + 8 <= head.length) {
    const type = boxType(head, at + 4);
    if (type === 'moov') return 'index-first';
    if (type === 'mdat') return 'index-last';
    let size = view.getUint32(at);
    if (size === 1) {
      // 64-bit size follows the type.
      if (at + 16 > head.length) return ended ? 'unknown' : 'need-more';
      const big = view.getBigUint64(at + 8);
      if (big > BigInt(Number.MAX_SAFE_INTEGER)) return 'unknown';
      size = Number(big);
      if (size < 16) return 'unknown';
    } else if (size === 0) {
      // "Extends to the end of the file": neither moov nor mdat can follow it.
      return 'unknown';
    } else if (size < 8) {
      return 'unknown';
    }
    at += size;
  }
  return ended ? 'unknown' : 'need-more';
}
