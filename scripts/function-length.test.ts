/**
 * No function over 120 lines in the product's folders (api/, workers/, engine/, cli/): a function
 * that long does several things, and a reader cannot hold it at once. TypeScript is parsed with the
 * compiler itself (typescript 7's API: its Go parser over one temporary project of exactly these files,
 * nothing resolved, no lib), so every function, method, accessor, constructor and arrow function is
 * measured from its signature to its closing brace. The native sources (engine/**\/*.cpp, .inc, .h)
 * have no parser here: their top-level function bodies are found by matching braces once comments,
 * strings and preprocessor lines are blanked out.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { type Node, type SourceFile, SyntaxKind } from 'typescript/unstable/ast';
import { API } from 'typescript/unstable/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const FOLDERS = ['api', 'workers', 'engine', 'cli'];
const MAX_LINES = 120;

interface Long {
  /** `file: name`. */
  key: string;
  line: number;
  lines: number;
}

function walk(dir: string, keep: (name: string) => boolean, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (!['node_modules', 'build', 'cache', '.cache'].includes(e.name)) walk(p, keep, out);
    } else if (keep(e.name)) {
      out.push(p);
    }
  }
  return out;
}

const FUNCTION_KINDS: ReadonlySet<SyntaxKind> = new Set([
  SyntaxKind.FunctionDeclaration,
  SyntaxKind.FunctionExpression,
  SyntaxKind.ArrowFunction,
  SyntaxKind.MethodDeclaration,
  SyntaxKind.Constructor,
  SyntaxKind.GetAccessor,
  SyntaxKind.SetAccessor,
]);

function lineIndex(text: string): (pos: number) => number {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return (pos) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= pos) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
}

/** A readable name: the declaration's own, or where an anonymous function sits. */
function nameOf(node: Node, sf: SourceFile, line: number): string {
  const own = (node as { name?: { text?: string } }).name?.text;
  if (own) return own;
  if (node.kind === SyntaxKind.Constructor) return 'constructor';
  const parent = node.parent as (Node & { name?: { text?: string } }) | undefined;
  if (parent?.name?.text && parent.kind !== SyntaxKind.CallExpression) return parent.name.text;
  let outer = node.parent;
  while (outer && !FUNCTION_KINDS.has(outer.kind)) outer = outer.parent;
  const where = outer ? nameOf(outer, sf, 0) : 'module';
  return `${where} > anonymous function at line ${line}`;
}

function longTypeScriptFunctions(project: { getSourceFile(f: string): SourceFile | undefined }, files: string[]) {
  const found: Long[] = [];
  for (const file of files) {
    const sf = project.getSourceFile(file);
    if (!sf) throw new Error(`the compiler did not parse ${file}`);
    const lineOf = lineIndex(sf.text);
    const visit = (node: Node): void => {
      if (FUNCTION_KINDS.has(node.kind)) {
        const line = lineOf(node.getStart(sf));
        const lines = lineOf(node.end) - line + 1;
        if (lines > MAX_LINES) found.push({ key: `${relative(ROOT, file)}: ${nameOf(node, sf, line)}`, line, lines });
      }
      node.forEachChild(visit);
    };
    sf.forEachChild(visit);
  }
  return found;
}

/** Comments, string and character literals and preprocessor lines as spaces; newlines kept. */
function blankNonCode(src: string): string {
  const out = src.split('');
  const blank = (from: number, to: number) => {
    for (let i = from; i < to; i++) if (out[i] !== '\n') out[i] = ' ';
  };
  const directive = /[ \t]*#/y;
  let i = 0;
  let lineStart = true;
  while (i < src.length) {
    const c = src[i]!;
    directive.lastIndex = i;
    if (lineStart && directive.test(src)) {
      // A directive, with its backslash-continued lines.
      let end = src.indexOf('\n', i);
      while (end !== -1 && src[end - 1] === '\\') end = src.indexOf('\n', end + 1);
      if (end === -1) end = src.length;
      blank(i, end);
      i = end;
      continue;
    }
    lineStart = c === '\n';
    if (c === '/' && src[i + 1] === '/') {
      const end = src.indexOf('\n', i);
      const stop = end === -1 ? src.length : end;
      blank(i, stop);
      i = stop;
    } else if (c === '/' && src[i + 1] === '*') {
      const end = src.indexOf('*/', i + 2);
      const stop = end === -1 ? src.length : end + 2;
      blank(i, stop);
      i = stop;
    } else if (c === 'R' && src[i + 1] === '"' && !/\w/.test(src[i - 1] ?? '')) {
      const open = src.indexOf('(', i + 2);
      const delim = src.slice(i + 2, open);
      const close = src.indexOf(`)${delim}"`, open);
      const stop = close === -1 ? src.length : close + delim.length + 2;
      blank(i, stop);
      i = stop;
    } else if (c === '"' || (c === "'" && !/[0-9a-fA-F]/.test(src[i - 1] ?? ''))) {
      // A ' after a hex digit is C++14's digit separator, not a character literal.
      let j = i + 1;
      while (j < src.length && src[j] !== c && src[j] !== '\n') j += src[j] === '\\' ? 2 : 1;
      blank(i, j + 1);
      i = j + 1;
    } else {
      i++;
    }
  }
  return out.join('');
}

/** What a brace opens, judged by the code since the last statement or block boundary. */
function opens(header: string): 'container' | 'function' | 'other' {
  const h = header.replace(/\s+/g, ' ').trim();
  if (/^(?:inline )?namespace\b/.test(h) || /^extern\s*$/.test(h) || h === 'extern') return 'container';
  if (/^(?:template ?<.*> ?)?(?:class|struct|union)\b[^()]*$/.test(h)) return 'container';
  if (/\)\s*(?:const|noexcept(?:\s*\([^)]*\))?|override|final|mutable|&&?|\s)*(?:->\s*[^{};=]+)?$/.test(h)) {
    return h.includes('(') && !/^(?:enum|return)\b/.test(h) && !/=\s*$/.test(h) ? 'function' : 'other';
  }
  // A constructor's initializer list: `) : member(…), other{…} {`.
  if (/\)\s*:\s*[\w:]+\s*[({].*[)}]$/.test(h)) return 'function';
  return 'other';
}

/** Top-level function bodies (in namespaces and class bodies too) longer than MAX_LINES. */
function longNativeFunctions(file: string): Long[] {
  const code = blankNonCode(readFileSync(file, 'utf8'));
  const lineOf = lineIndex(code);
  const found: Long[] = [];
  const matching = (open: number): number => {
    let depth = 0;
    for (let k = open; k < code.length; k++) {
      if (code[k] === '{') depth++;
      else if (code[k] === '}' && --depth === 0) return k;
    }
    throw new Error(`${relative(ROOT, file)}: unbalanced braces from line ${lineOf(open)}`);
  };
  // `from` is where the current header began: after the last `;`, or a container's braces.
  const scan = (start: number, stop: number): void => {
    let from = start;
    for (let k = start; k < stop; k++) {
      const c = code[k];
      if (c === ';') from = k + 1;
      else if (c === '}') from = k + 1;
      else if (c === '{') {
        const header = code.slice(from, k);
        const close = matching(k);
        const kind = opens(header);
        if (kind === 'container') {
          scan(k + 1, close);
          from = close + 1;
        } else if (kind === 'function') {
          const first = from + (header.length - header.trimStart().length);
          const line = lineOf(first);
          const lines = lineOf(close) - line + 1;
          const name = /([~\w:]+)\s*\(/.exec(header)?.[1];
          if (lines > MAX_LINES) found.push({ key: `${relative(ROOT, file)}: ${name ?? `line ${line}`}`, line, lines });
          from = close + 1;
        }
        // Anything else (an initializer, an enum) stays part of the header it sits in.
        k = close;
      }
    }
  };
  scan(0, code.length);
  return found;
}

describe('function length', () => {
  const tsFiles = FOLDERS.flatMap((d) =>
    walk(join(ROOT, d), (n) => n.endsWith('.ts') && !n.endsWith('.test.ts') && !n.endsWith('.d.ts')),
  ).sort();
  const nativeFiles = walk(join(ROOT, 'engine'), (n) => /\.(?:cpp|inc|h)$/.test(n)).sort();
  let api: API | undefined;
  let tmp: string | undefined;
  let tsLong: Long[] = [];
  /** What the scan finds in a sample written for the purpose: proof that it sees a long function. */
  let sampleLong: Long[] = [];
  const filler = Array.from({ length: MAX_LINES }, (_, i) => `  x += ${i};`).join('\n');

  beforeAll(() => {
    // A project of exactly these files: nothing resolved and no lib, so only parsing is paid for.
    tmp = mkdtempSync(join(tmpdir(), 'function-length-'));
    const config = join(tmp, 'tsconfig.json');
    const sample = join(tmp, 'sample.ts');
    writeFileSync(
      sample,
      `class C {\n  short() {\n    return 1;\n  }\n}\nexport const long = (x: number) => {\n${filler}\n  return x;\n};\n`,
    );
    const compilerOptions = { noResolve: true, noLib: true, types: [], noEmit: true, allowImportingTsExtensions: true };
    writeFileSync(config, JSON.stringify({ compilerOptions, files: [...tsFiles, sample] }));
    api = new API({ cwd: ROOT });
    const project = api.updateSnapshot({ openProject: config }).getProjects()[0];
    if (!project) throw new Error('the compiler opened no project');
    tsLong = longTypeScriptFunctions(project.program, tsFiles);
    sampleLong = longTypeScriptFunctions(project.program, [sample]);
  });

  afterAll(() => {
    api?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it(`has no TypeScript function over ${MAX_LINES} lines in ${FOLDERS.join('/, ')}/`, () => {
    expect(tsLong.map((f) => `${f.key} (line ${f.line}): ${f.lines} lines`)).toEqual([]);
  });

  it(`has no native function body over ${MAX_LINES} lines in engine/`, () => {
    expect(nativeFiles.flatMap(longNativeFunctions).map((f) => `${f.key} (line ${f.line}): ${f.lines} lines`)).toEqual(
      [],
    );
  });

  it('measures what it polices: the files, and a long function when there is one', () => {
    expect(tsFiles.map((f) => relative(ROOT, f))).toEqual(
      expect.arrayContaining(['api/app.ts', 'workers/worker.ts', 'engine/index.ts', 'cli/transcribe.ts']),
    );
    expect(nativeFiles.length).toBeGreaterThan(10);
    expect(sampleLong.map((f) => [f.key.split(': ')[1], f.lines])).toEqual([['long', MAX_LINES + 3]]);
    const native = join(tmp!, 'long.cpp');
    writeFileSync(
      native,
      `// a { in a comment\nnamespace n {\nstruct S {\n  int f() const {\n    return 1;\n  }\n};\nstatic const char *s = "}";\nint long_one(int x) {\n${filler}\n  return x;\n}\n}\n`,
    );
    expect(longNativeFunctions(native).map((f) => [f.key.split(': ')[1], f.lines])).toEqual([
      ['long_one', MAX_LINES + 3],
    ]);
  });
});
