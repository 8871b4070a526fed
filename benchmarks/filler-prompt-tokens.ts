/**
 * What the filler-keeping prompts cost (engine/edit FILLER_PROMPTS): each one's tokens under
 * Whisper's multilingual vocabulary (byte-level BPE over the ranks in `multilingual.tiktoken`, the
 * GPT-2 pre-split, as tiktoken does), plus the <|startofprev|> token that whisper.cpp puts before a
 * prompt, against the 224-token prompt window. A pure count: no model runs.
 *
 *   node_modules/.bin/node benchmarks/filler-prompt-tokens.ts
 */
import { readFileSync } from 'node:fs';
import { FILLER_PROMPTS } from '../engine/edit/index.ts';
import { PROMPT_MAX_TOKENS } from '../engine/index.ts';
import { fixture } from '../test-support/fixtures.ts';
import { writeResult } from './lib/report.ts';

const ranks = new Map<string, number>();
for (const line of readFileSync(fixture('whisper/multilingual.tiktoken'), 'utf8').split('\n')) {
  const [b64, rank] = line.split(' ');
  if (b64 && rank) ranks.set(Buffer.from(b64, 'base64').toString('latin1'), Number(rank));
}

const PRE_SPLIT = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

/** Byte-pair merges by lowest rank until none applies; the parts left are the tokens. */
function bpe(piece: string): number {
  let parts = [...Buffer.from(piece, 'utf8')].map((b) => String.fromCharCode(b));
  for (;;) {
    let best = -1;
    let bestRank = Number.POSITIVE_INFINITY;
    for (let i = 0; i + 1 < parts.length; i++) {
      const r = ranks.get((parts[i] as string) + (parts[i + 1] as string));
      if (r !== undefined && r < bestRank) {
        bestRank = r;
        best = i;
      }
    }
    if (best < 0) return parts.length;
    parts = [...parts.slice(0, best), (parts[best] as string) + (parts[best + 1] as string), ...parts.slice(best + 2)];
  }
}

const count = (text: string) => (text.match(PRE_SPLIT) ?? []).reduce((n, piece) => n + bpe(piece), 0);

const prompts = Object.fromEntries(
  Object.entries(FILLER_PROMPTS).map(([lang, text]) => {
    const tokens = count(` ${text}`) + 1;
    return [lang, { text, tokens, shareOfWindow: Math.round((tokens / PROMPT_MAX_TOKENS) * 1000) / 10 }];
  }),
);
console.table(
  Object.fromEntries(Object.entries(prompts).map(([l, p]) => [l, { tokens: p.tokens, '% of 224': p.shareOfWindow }])),
);
writeResult('filler-prompt-tokens', { window: PROMPT_MAX_TOKENS, prompts });
