/**
 * The documented list of error codes (ERRORS.md), derived from the code: each layer's table gives
 * the codes and their meaning, the API's tables give HTTP statuses, workers/retry.ts the retry
 * class, and a scan of the production source says where each code is raised. error-codes.test.ts
 * fails when a code is raised but in no table, listed but never raised, or ERRORS.md is stale.
 *
 *   node scripts/error-codes.ts     rewrites ERRORS.md
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { API_ERROR_CODES, ENGINE_STATUS, QUEUE_STATUS } from '../api/errors.ts';
import { CLI_ERROR_CODES } from '../cli/errors.ts';
import { ERROR_CODES } from '../engine/errors.ts';
import { QUEUE_ERROR_CODES } from '../workers/errors.ts';
import { RETRY_CLASS } from '../workers/retry.ts';

export const ROOT = resolve(import.meta.dirname, '..');
export const ERRORS_MD = join(ROOT, 'ERRORS.md');

export type Layer = 'engine' | 'queue' | 'api' | 'cli';

export const TABLES: Record<Layer, Readonly<Record<string, string>>> = {
  engine: ERROR_CODES,
  queue: QUEUE_ERROR_CODES,
  api: API_ERROR_CODES,
  cli: CLI_ERROR_CODES,
};

const TABLE_FILES: Record<Layer, string> = {
  engine: 'engine/errors.ts',
  queue: 'workers/errors.ts',
  api: 'api/errors.ts',
  cli: 'cli/errors.ts',
};

/** Where a layer raises its codes: each pattern's first group is the code. */
const RAISE: Record<Layer, RegExp[]> = {
  engine: [
    /new EngineError\(\s*'([A-Z0-9_]+)'/g,
    // The addon rejects with {code}; engine/asr turns those into EngineErrors.
    /\bFail\(\s*"([A-Z0-9_]+)"/g,
    /CodedError\(\s*env,\s*"([A-Z0-9_]+)"/g,
    // Helpers in engine/errors.ts: abortError → ABORTED, asEngineError → INTERNAL_ERROR.
    /\b(?:abortError|throwIfAborted)\((?<ABORTED>)/g,
    /\basEngineError\((?<INTERNAL_ERROR>)/g,
  ],
  queue: [/new QueueError\(\s*'([A-Z0-9_]+)'/g],
  api: [
    /new ApiError\(\s*\d+,\s*'([A-Z0-9_]+)'/g,
    /paymentRequired\([^,]+,\s*'([A-Z0-9_]+)'/g,
    // toErrorResponse's own bodies.
    /statusCode:\s*\d+,\s*code:\s*'([A-Z0-9_]+)'/g,
    // TUS answers in its own plain-text body, led by the code.
    /tus(?:Error|Refusal)\(\s*\d+,\s*'([A-Z0-9_]+):/g,
  ],
  cli: [/: CliErrorCode = '([A-Z0-9_]+)'/g],
};

/** The API's statuses for its own codes, read from where it raises them. */
const API_STATUS: RegExp[] = [
  /new ApiError\(\s*(\d+),\s*'([A-Z0-9_]+)'/g,
  /statusCode:\s*(\d+),\s*code:\s*'([A-Z0-9_]+)'/g,
  /tus(?:Error|Refusal)\(\s*(\d+),\s*'([A-Z0-9_]+):/g,
];

function productionFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        // Test helpers live in testing/ folders (and the root test-support/, outside these folders).
        if (['node_modules', 'cache', 'testing'].includes(e.name)) continue;
        walk(p);
      } else if (/\.(ts|cpp|h)$/.test(e.name) && !/\.test\.ts$/.test(e.name)) {
        out.push(p);
      }
    }
  };
  for (const d of ['engine', 'models', 'workers', 'api', 'cli']) walk(join(ROOT, d));
  return out.sort();
}

export interface Raised {
  /** code → files (relative) that raise it, per layer. */
  byLayer: Record<Layer, Map<string, Set<string>>>;
  apiStatus: Map<string, Set<number>>;
}

export function scanSource(): Raised {
  const byLayer = { engine: new Map(), queue: new Map(), api: new Map(), cli: new Map() } as Raised['byLayer'];
  const apiStatus = new Map<string, Set<number>>();
  for (const file of productionFiles()) {
    const rel = relative(ROOT, file);
    const text = readFileSync(file, 'utf8');
    for (const layer of Object.keys(RAISE) as Layer[]) {
      if (rel === TABLE_FILES[layer] && layer !== 'api') continue; // the table itself
      for (const re of RAISE[layer]) {
        for (const m of text.matchAll(re)) {
          const code = m[1] ?? Object.keys(m.groups ?? {})[0];
          if (!code) continue;
          // The API answers an unexpected failure with the engine's INTERNAL_ERROR: one name everywhere.
          if (layer === 'api' && code in ERROR_CODES) continue;
          const files = byLayer[layer].get(code) ?? new Set<string>();
          files.add(rel);
          byLayer[layer].set(code, files);
        }
      }
    }
    for (const re of API_STATUS) {
      for (const m of text.matchAll(re)) {
        const set = apiStatus.get(m[2]!) ?? new Set<number>();
        set.add(Number(m[1]));
        apiStatus.set(m[2]!, set);
      }
    }
    if (/paymentRequired\(/.test(text)) {
      for (const m of text.matchAll(RAISE.api[1]!)) {
        const set = apiStatus.get(m[1]!) ?? new Set<number>();
        set.add(402);
        apiStatus.set(m[1]!, set);
      }
    }
  }
  return { byLayer, apiStatus };
}

const LAYER_TITLE: Record<Layer, string> = {
  engine: 'Engine (`EngineError`, engine/errors.ts; also raised by models/)',
  queue: 'Queue (`QueueError`, workers/errors.ts)',
  api: 'HTTP service (`ApiError`, api/errors.ts)',
  cli: 'CLI (cli/errors.ts)',
};

const cell = (s: string) => s.replaceAll('|', '\\|');

export function renderErrorsMd(raised: Raised = scanSource()): string {
  const lines = [
    '# Error codes',
    '',
    'Generated by `npm run error-codes` from the code: each layer owns the codes it raises, and',
    '`scripts/error-codes.test.ts` fails when a code is raised but listed nowhere, listed but never raised,',
    'or this file is stale. Every failure carries one code; each boundary maps the codes of the layer below',
    'once (the API: a table to HTTP statuses; the workers: a retry class). Anything unexpected is',
    '`INTERNAL_ERROR`, in every layer: answered 500 and logged by the API, retried once by the workers.',
    '',
  ];
  for (const layer of Object.keys(TABLES) as Layer[]) {
    lines.push(`## ${LAYER_TITLE[layer]}`, '');
    const head =
      layer === 'engine'
        ? ['code', 'HTTP', 'retry', 'meaning']
        : layer === 'queue' || layer === 'api'
          ? ['code', 'HTTP', 'meaning']
          : ['code', 'meaning'];
    lines.push(`| ${head.join(' | ')} |`, `| ${head.map(() => '---').join(' | ')} |`);
    for (const [code, meaning] of Object.entries(TABLES[layer])) {
      const row = [`\`${code}\``];
      if (layer === 'engine') {
        row.push(String(ENGINE_STATUS[code as keyof typeof ENGINE_STATUS]));
        row.push(RETRY_CLASS[code as keyof typeof RETRY_CLASS]);
      } else if (layer === 'queue') {
        row.push(String(QUEUE_STATUS[code as keyof typeof QUEUE_STATUS]));
      } else if (layer === 'api') {
        row.push([...(raised.apiStatus.get(code) ?? [])].sort().join(', ') || '—');
      }
      row.push(cell(meaning));
      lines.push(`| ${row.join(' | ')} |`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

if (import.meta.main) {
  writeFileSync(ERRORS_MD, renderErrorsMd());
  console.log(`error-codes: wrote ${relative(process.cwd(), ERRORS_MD)}`);
}
