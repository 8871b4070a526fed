/**
 * What a batch is made of: the items read from a directory (every media file under it) or from a list
 * file — plain lines of paths/URLs, JSONL objects, or CSV with a header — each with a stable id that
 * names its output files. Ids are derived, not numbered, so a re-run names the same item the same way.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { extname, isAbsolute, join, relative, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { EngineError } from '../../engine/errors.ts';

export interface BatchItem {
  /** Names the outputs: `<out>/<id>.<format>`. [A-Za-z0-9._-], at most 128 characters. */
  id: string;
  /** Absolute local path or https URL. */
  source: string;
  language?: string;
}

export const MEDIA_EXTENSIONS = new Set([
  '.wav',
  '.mp3',
  '.flac',
  '.ogg',
  '.oga',
  '.opus',
  '.m4a',
  '.aac',
  '.wma',
  '.aiff',
  '.aif',
  '.caf',
  '.mp4',
  '.m4v',
  '.mov',
  '.mkv',
  '.webm',
  '.avi',
  '.wmv',
  '.mpg',
  '.mpeg',
  '.ts',
  '.3gp',
]);

/** A list file holds at most this many items; larger lists are split by the operator. */
export const MAX_ITEMS = 1_000_000;
const MAX_LINE_CHARS = 8192;

function invalid(message: string): EngineError {
  return new EngineError('INVALID_OPTIONS', message);
}

/** A filesystem-safe id from free text; long or altered ones get a hash suffix so they stay unique. */
export function toItemId(text: string): string {
  const cleaned = text
    .replace(/\.[^./\\]+$/, '')
    .replace(/[\\/]+/g, '__')
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^[^A-Za-z0-9]+/, '');
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 8);
  if (cleaned.length === 0) return `item-${hash}`;
  return cleaned.length > 100 ? `${cleaned.slice(0, 100)}-${hash}` : cleaned;
}

/** An id given by the list is kept as is when it is already safe (ids like "1" or "ep-12.part2" stay). */
function safeId(id: string): string {
  return /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(id) ? id : toItemId(`${id}.x`);
}

function isUrl(s: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(s);
}

async function walk(dir: string, out: string[]): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    if (e.name.startsWith('.')) continue;
    const path = join(dir, e.name);
    if (e.isDirectory()) await walk(path, out);
    else if (e.isFile() && MEDIA_EXTENSIONS.has(extname(e.name).toLowerCase())) out.push(path);
    if (out.length > MAX_ITEMS) throw invalid(`More than ${MAX_ITEMS} media files under the directory.`);
  }
}

/** Splits one CSV line (RFC 4180 quoting; no newlines inside fields). */
export function splitCsvLine(line: string): string[] {
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field === '') quoted = true;
    else if (c === ',') {
      fields.push(field);
      field = '';
    } else field += c;
  }
  fields.push(field);
  return fields.map((f) => f.trim());
}

/**
 * Ids name output files, so they must be unique. A derived id that collides (a.wav and a.mp3, two URLs
 * ending in audio.mp3) gets a hash of its source appended; a collision between ids the list gave
 * explicitly is the operator's to fix.
 */
function uniqueIds(items: Array<BatchItem & { explicit?: boolean }>): BatchItem[] {
  const seen = new Map<string, string>();
  const out: BatchItem[] = [];
  for (const { explicit, ...item } of items) {
    const prior = seen.get(item.id);
    if (prior !== undefined) {
      if (explicit) throw invalid(`Two items have the id "${item.id}" (${prior} and ${item.source}).`);
      item.id = `${item.id.slice(0, 100)}-${createHash('sha256').update(item.source).digest('hex').slice(0, 8)}`;
      if (seen.has(item.id)) throw invalid(`The same source is listed twice: ${item.source}.`);
    }
    seen.set(item.id, item.source);
    out.push(item);
  }
  return out;
}

export async function readBatchItems(input: string): Promise<BatchItem[]> {
  const at = resolve(input);
  const info = await stat(at).catch((cause: unknown) => {
    throw new EngineError('SOURCE_NOT_FOUND', `Cannot read ${input}.`, { cause });
  });
  if (info.isDirectory()) {
    const files: string[] = [];
    await walk(at, files);
    return uniqueIds(files.map((path) => ({ id: toItemId(relative(at, path)), source: path })));
  }
  return uniqueIds(await readListFile(at));
}

async function readListFile(path: string): Promise<Array<BatchItem & { explicit?: boolean }>> {
  const base = resolve(path, '..');
  const kind = extname(path).toLowerCase();
  const items: Array<BatchItem & { explicit?: boolean }> = [];
  let header: string[] | undefined;
  let lineNo = 0;
  const where = () => `${path}:${lineNo}`;
  const toSource = (s: string) => (isUrl(s) || isAbsolute(s) ? s : resolve(base, s));
  const lines = createInterface({
    input: createReadStream(path, { encoding: 'utf8' }),
    crlfDelay: Number.POSITIVE_INFINITY,
  });
  for await (const raw of lines) {
    lineNo++;
    if (raw.length > MAX_LINE_CHARS) throw invalid(`${where()}: line longer than ${MAX_LINE_CHARS} characters.`);
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (items.length >= MAX_ITEMS) throw invalid(`${path}: more than ${MAX_ITEMS} items.`);
    if (kind === '.jsonl' || kind === '.ndjson' || (kind !== '.csv' && line.startsWith('{'))) {
      let row: Record<string, unknown>;
      try {
        row = JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw invalid(`${where()}: not a JSON object.`);
      }
      const source = row.source ?? row.url ?? row.path ?? row.file;
      if (typeof source !== 'string' || source === '') throw invalid(`${where()}: no "source" (or url/path).`);
      const explicit = row.id !== undefined && row.id !== null && row.id !== '';
      const id = explicit ? safeId(String(row.id)) : toItemId(source.replace(/^.*[\\/]/, ''));
      const item: BatchItem & { explicit?: boolean } = { id, source: toSource(source), explicit };
      if (typeof row.language === 'string') item.language = row.language;
      items.push(item);
    } else if (kind === '.csv') {
      const fields = splitCsvLine(line);
      if (!header) {
        header = fields.map((f) => f.toLowerCase());
        if (!header.some((h) => ['source', 'url', 'path', 'file'].includes(h))) {
          throw invalid(`${where()}: the CSV header needs a source (or url/path/file) column.`);
        }
        continue;
      }
      const get = (...names: string[]) => {
        for (const n of names) {
          const i = header!.indexOf(n);
          if (i >= 0 && fields[i]) return fields[i];
        }
        return undefined;
      };
      const source = get('source', 'url', 'path', 'file');
      if (!source) throw invalid(`${where()}: empty source.`);
      const given = get('id');
      const id = given ? safeId(given) : toItemId(source.replace(/^.*[\\/]/, ''));
      const item: BatchItem & { explicit?: boolean } = { id, source: toSource(source), explicit: !!given };
      const language = get('language', 'lang');
      if (language) item.language = language;
      items.push(item);
    } else {
      items.push({ id: toItemId(line.replace(/[?#].*$/, '').replace(/^.*[\\/]/, '')), source: toSource(line) });
    }
  }
  return items;
}
