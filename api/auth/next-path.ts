/**
 * Where a person goes back to after signing in: a path on this origin only. Anything a browser
 * could read as another origin is refused, so `?next=` can never become an open redirect:
 * `//host` and `/\host` (browsers treat `\` as `/`), absolute URLs, and control characters
 * (a tab or newline inside `/\t/host` is stripped by the URL parser, joining the slashes).
 *
 * What is handed out is the URL parser's normalised path, not what was written, so the rules are
 * checked on that too: dot segments collapse (`/.//host`, `/%2e//host`, `/x/..//host` all become
 * `//host`), and a path that normalises to a scheme-relative URL is refused like one written so.
 */

export const DEFAULT_NEXT_PATH = '/app';
const MAX_NEXT_CHARS = 2000;

/** The written form's rules: a single leading slash, no backslash, control or space. */
function looksLikeLocalPath(s: string): boolean {
  if (s.length === 0 || s.length > MAX_NEXT_CHARS) return false;
  if (!s.startsWith('/') || s.startsWith('//')) return false;
  // Backslashes, C0 controls, DEL and whitespace have no place in a path we hand out.
  return !/[\\\u0000-\u0020\u007f]/.test(s);
}

export function safeNextPath(raw: unknown): string | null {
  if (typeof raw !== 'string' || !looksLikeLocalPath(raw)) return null;
  // The parser is the last word: the path must stay on the origin it is resolved against.
  const base = 'http://next.invalid';
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    return null;
  }
  if (url.origin !== base) return null;
  const normalised = `${url.pathname}${url.search}${url.hash}`;
  // The browser reads what we hand out, so that is what must pass; and it must be a fixed point
  // (parsing it again changes nothing), so no second normalisation can turn it into `//host`.
  if (!looksLikeLocalPath(normalised)) return null;
  const again = new URL(normalised, base);
  if (again.origin !== base || `${again.pathname}${again.search}${again.hash}` !== normalised) return null;
  return normalised;
}
