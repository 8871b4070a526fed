/**
 * The stretch of a PCM stream the pipeline still needs: chunks appended as they arrive, addressed by
 * absolute sample index, dropped from the front once no window can need them. Each chunk is copied on
 * append: the source may reuse its buffer, or hand out views into a much larger one that would
 * otherwise stay alive.
 */
export class PcmBuffer {
  #chunks: Float32Array[] = [];
  /** Absolute index of the first sample of #chunks[0]. */
  #base = 0;
  #end = 0;

  /** Samples received since the start of the stream. */
  get end(): number {
    return this.#end;
  }

  /** Absolute index of the oldest sample still held. */
  get start(): number {
    return this.#base;
  }

  /** Samples held now. */
  get held(): number {
    return this.#end - this.#base;
  }

  push(chunk: Float32Array): void {
    if (chunk.length === 0) return;
    this.#chunks.push(chunk.slice());
    this.#end += chunk.length;
  }

  /** Copies samples [from, to) out; the range must lie within what is held. */
  slice(from: number, to: number): Float32Array {
    if (from < this.#base || to > this.#end || to < from) {
      throw new RangeError(`PCM slice [${from}, ${to}) outside the held range [${this.#base}, ${this.#end})`);
    }
    const out = new Float32Array(to - from);
    let pos = this.#base;
    for (const c of this.#chunks) {
      const cEnd = pos + c.length;
      if (cEnd > from && pos < to) {
        const a = Math.max(from, pos) - pos;
        const b = Math.min(to, cEnd) - pos;
        out.set(c.subarray(a, b), pos + a - from);
      }
      if (cEnd >= to) break;
      pos = cEnd;
    }
    return out;
  }

  /** Forgets whole chunks that end at or before `sample`. */
  dropBefore(sample: number): void {
    while (this.#chunks.length > 0) {
      const first = this.#chunks[0]!;
      if (this.#base + first.length > sample) break;
      this.#base += first.length;
      this.#chunks.shift();
    }
  }
}
