/**
 * Where a person goes back to after signing in: a path on this origin only. Anything a browser
 * could read as another origin is refused, so `?next=` can never become an open redirect:
 * `//host` and `/\host` (browsers treat `\` as `/`), absolute URLs, and control characters
 * (a tab or newline inside `/\t/host` is stripped by the URL parser, joining the slashes).
 */

export const DEFAULT_NEXT_PATH = '/app';
const MAX_NEXT_CHARS = 2000;

export function safeNextPath(raw: unknown): string | null {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > MAX_NEXT_CHARS) return null;
  if (!raw.startsWith('/') || raw.startsWith('//')) return null;
  // Backslashes, C0 controls, DEL and whitespace have no place in a path we hand out.
  if (/[\\\u0000-\u0020\u007f]/.test(raw)) return null;
  // The parser is the last word: the path must stay on the origin it is resolved against.
  const base = 'http://next.invalid';
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    return null;
  }
  if (url.origin !== base) return null;
  return `${url.pathname}${url.search}${url.hash}`;
}
