/**
 * Ranked search for the docs MCP server: BM25 over a few dozen documents built at start.
 * Hand-written because the corpus is small and fixed: an index library would bring
 * persistence, fuzzy matching and a dependency for what is forty lines here.
 */

export interface Searchable {
  id: string;
  title: string;
  body: string;
}

const K1 = 2;
const B = 0.75;
/** A word in the title counts as much as this many in the body; one in a Markdown heading, as two. */
const TITLE_WEIGHT = 3;
const HEADING_WEIGHT = 2;

/** Lower-case words; a trailing plural `s` dropped so "payment" finds "payments". */
export function tokens(text: string): string[] {
  return (text.toLowerCase().match(/[a-z0-9]+/g) ?? []).map((w) =>
    w.length > 3 && w.endsWith('s') && !w.endsWith('ss') ? w.slice(0, -1) : w,
  );
}

export class Bm25Index<T extends Searchable> {
  readonly #docs: Array<{ doc: T; tf: Map<string, number>; len: number }>;
  readonly #df = new Map<string, number>();
  readonly #avgLen: number;

  constructor(docs: readonly T[]) {
    this.#docs = docs.map((doc) => {
      const tf = new Map<string, number>();
      const add = (t: string, w: number) => tf.set(t, (tf.get(t) ?? 0) + w);
      for (const t of tokens(doc.title)) add(t, TITLE_WEIGHT);
      const body = tokens(doc.body);
      for (const t of body) add(t, 1);
      for (const heading of doc.body.match(/^#{1,6} .*$/gm) ?? []) {
        for (const t of tokens(heading)) add(t, HEADING_WEIGHT - 1);
      }
      for (const t of tf.keys()) this.#df.set(t, (this.#df.get(t) ?? 0) + 1);
      return { doc, tf, len: body.length + TITLE_WEIGHT * tokens(doc.title).length };
    });
    this.#avgLen = this.#docs.reduce((s, d) => s + d.len, 0) / Math.max(1, this.#docs.length);
  }

  search(query: string, limit: number): Array<{ doc: T; score: number }> {
    const terms = [...new Set(tokens(query))];
    const n = this.#docs.length;
    return this.#docs
      .map(({ doc, tf, len }) => {
        let score = 0;
        for (const t of terms) {
          const f = tf.get(t);
          if (!f) continue;
          const df = this.#df.get(t) ?? 0;
          const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
          score += (idf * f * (K1 + 1)) / (f + K1 * (1 - B + (B * len) / this.#avgLen));
        }
        return { doc, score };
      })
      .filter((r) => r.score > 0)
      .sort((a, b) => b.score - a.score || a.doc.id.localeCompare(b.doc.id))
      .slice(0, limit);
  }
}

/** The first stretch of `body` around a query word, for a search result. */
export function snippet(body: string, query: string, width = 200): string {
  const flat = body.replace(/\s+/g, ' ').trim();
  const lower = flat.toLowerCase();
  const hit = tokens(query)
    .map((t) => lower.indexOf(t))
    .filter((i) => i >= 0)
    .sort((a, b) => a - b)[0];
  // Whole code points: a cut never leaves half of a surrogate pair in the snippet.
  const chars = [...flat];
  const start = Math.max(0, [...flat.slice(0, hit ?? 0)].length - width / 4);
  return (
    (start > 0 ? '…' : '') + chars.slice(start, start + width).join('') + (start + width < chars.length ? '…' : '')
  );
}
