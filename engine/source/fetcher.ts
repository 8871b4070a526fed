/**
 * SafeFetcher: opens a remote media URL chosen by a stranger without letting the request reach
 * anything but the public internet (or the service's own media hosts).
 *
 * Where each rule lives:
 * - URL rules (https only, no userinfo, allow-list, IP-literal hosts): url-policy.ts, applied to
 *   the first URL and to every redirect target; we follow redirects ourselves, one hop at a time.
 * - Address rule: in the dialer. Every DNS answer is checked inside the socket's `lookup` hook and
 *   the socket connects only to the addresses that hook returned, so a second resolution (DNS
 *   rebinding) never happens. The connected socket's peer address is checked once more.
 * - Limits: the byte cap and the clocks sit inside the stream handed to the caller; nothing is
 *   buffered beyond what the consumer has not yet read.
 */
import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { abortError, EngineError, isEngineError } from '../errors.ts';
import type { RunOptions } from '../types.ts';
import { type AddressPolicyOptions, checkAddress } from './address-policy.ts';
import { checkUrl, type SourcePolicy, type UrlPolicyOptions } from './url-policy.ts';

/** Resolves a hostname to every address it has (A and AAAA), like `dns.lookup(h, {all: true})`. */
export type LookupFn = (hostname: string) => Promise<LookupAddress[]>;

export interface SafeFetcherOptions {
  /** Trusted CA certificates, replacing the system's roots (tests use a CA made on the fly). */
  ca?: string | Buffer | Array<string | Buffer>;
  /**
   * TEST ONLY: also permit 127.0.0.0/8 (nothing else). Must be the literal `true`; no
   * configuration file or environment variable maps onto it, and production code never sets it.
   */
  dangerouslyAllowLoopback?: boolean;
  /** Replaces the system resolver (tests answer with addresses they choose). */
  lookup?: LookupFn;
  /** Ports a URL may name, the operator's choice (default: 443 only). */
  allowedPorts?: readonly number[] | 'any';
  userAgent?: string;
}

export interface SourceOptions extends RunOptions {
  /** Defaults to `{mode: 'public'}`. */
  policy?: SourcePolicy;
  /** Byte cap on the body (default 200 MiB). */
  maxBytes?: number;
  /** DNS, TCP and TLS until the connection is ready (default 10 s). */
  connectTimeoutMs?: number;
  /** From the request sent until the response headers are in (default 30 s). */
  firstByteTimeoutMs?: number;
  /** Longest silence between two body chunks while we are reading (default 30 s). */
  idleTimeoutMs?: number;
  /**
   * Time the origin may take for the whole exchange, redirects included (default 30 min). The
   * clock stops while the consumer applies backpressure: a slow transcription never fails a
   * healthy download, a slow origin always runs out of time.
   */
  totalTimeoutMs?: number;
  /** Redirect hops followed, each re-checked (default 5). */
  maxRedirects?: number;
}

export interface OpenedSource {
  /** The body, capped and timed. Errors are EngineErrors with source codes (or ABORTED). */
  body: Readable;
  /** The final URL, after redirects. */
  url: string;
  contentType?: string;
  contentLength?: number;
}

/** 200 MiB: what most tools display as "200 MB". */
export const DEFAULT_MAX_BYTES = 200 * 1024 * 1024;

export const SOURCE_DEFAULTS = Object.freeze({
  maxBytes: DEFAULT_MAX_BYTES,
  connectTimeoutMs: 10_000,
  firstByteTimeoutMs: 30_000,
  idleTimeoutMs: 30_000,
  totalTimeoutMs: 30 * 60_000,
  maxRedirects: 5,
});

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const PROGRESS_STEP_BYTES = 1024 * 1024;

export class SafeFetcher {
  readonly #ca: SafeFetcherOptions['ca'];
  readonly #addressOptions: AddressPolicyOptions;
  readonly #urlOptions: UrlPolicyOptions;
  readonly #resolve: LookupFn;
  readonly #userAgent: string;
  readonly #runs = new Set<FetchRun>();
  #closed = false;

  constructor(options: SafeFetcherOptions = {}) {
    this.#ca = options.ca;
    this.#addressOptions = Object.freeze({ allowLoopback: options.dangerouslyAllowLoopback === true });
    const ports = options.allowedPorts ?? [443];
    this.#urlOptions = Object.freeze({
      ...this.#addressOptions,
      allowedPorts: ports === 'any' ? ports : Object.freeze([...ports]),
    });
    this.#resolve = options.lookup ?? ((hostname) => dnsLookup(hostname, { all: true, order: 'verbatim' }));
    this.#userAgent = options.userAgent ?? 'transcribe-engine/0.1 (+media fetch)';
  }

  /**
   * Connects, follows redirects and returns once the final response's headers are in; the body
   * then streams through the caps. Throws EngineError with a SOURCE_* code (or ABORTED).
   */
  async open(url: string, options: SourceOptions = {}): Promise<OpenedSource> {
    if (this.#closed) throw new EngineError('ABORTED', 'The fetcher has been closed.');
    const limits = resolveLimits(options);
    const policy = options.policy ?? { mode: 'public' };
    if (options.signal?.aborted) throw abortError(options.signal, 'fetch');
    let current = checkUrl(url, policy, this.#urlOptions);

    const run = new FetchRun(limits, options, this.#dialer(limits.connectTimeoutMs), () => this.#runs.delete(run));
    this.#runs.add(run);
    try {
      const visited = new Set([current.href]);
      for (let hop = 0; ; hop++) {
        const res = await run.request(current, this.#userAgent);
        if (REDIRECT_STATUSES.has(res.statusCode)) {
          res.body.on('error', () => {}).destroy();
          const location = res.headers.location;
          if (typeof location !== 'string' || location === '') {
            throw new EngineError('SOURCE_HTTP_STATUS', `Redirect ${res.statusCode} without a usable Location.`, {
              details: { status: res.statusCode },
            });
          }
          if (hop >= limits.maxRedirects) {
            throw new EngineError('SOURCE_TOO_MANY_REDIRECTS', `More than ${limits.maxRedirects} redirects.`, {
              details: { maxRedirects: limits.maxRedirects },
            });
          }
          const next = checkUrl(location, policy, this.#urlOptions, current);
          if (visited.has(next.href)) {
            throw new EngineError('SOURCE_TOO_MANY_REDIRECTS', 'The origin redirects in a loop.', {
              details: { maxRedirects: limits.maxRedirects },
            });
          }
          visited.add(next.href);
          current = next;
          continue;
        }
        if (res.statusCode < 200 || res.statusCode > 299) {
          res.body.on('error', () => {}).destroy();
          throw new EngineError('SOURCE_HTTP_STATUS', `The origin answered HTTP ${res.statusCode}.`, {
            details: { status: res.statusCode },
          });
        }
        const contentLength = parseContentLength(res.headers['content-length']);
        if (contentLength !== undefined && contentLength > limits.maxBytes) {
          res.body.on('error', () => {}).destroy();
          throw tooLarge(limits.maxBytes, contentLength);
        }
        const contentType = res.headers['content-type'];
        const body = new SourceBody(res.body, run, limits.maxBytes, contentLength, options.onProgress);
        return {
          body,
          url: current.href,
          ...(typeof contentType === 'string' ? { contentType } : {}),
          ...(contentLength === undefined ? {} : { contentLength }),
        };
      }
    } catch (err) {
      const mapped = run.mapError(err);
      run.finish(mapped);
      throw mapped;
    }
  }

  /** Aborts every fetch still open (their bodies error with ABORTED) and refuses new ones. */
  async close(): Promise<void> {
    this.#closed = true;
    const runs = [...this.#runs];
    await Promise.all(runs.map((r) => r.finish(new EngineError('ABORTED', 'The fetcher was closed.'))));
  }

  /**
   * The connect function handed to undici. IP-literal hosts are checked here (they never reach
   * `lookup`); names are checked answer by answer inside `lookup`, and the socket dials only what
   * that returned. The connected peer is checked again as a last line of defence.
   */
  #dialer(connectTimeoutMs: number): buildConnector.connector {
    const addressOptions = this.#addressOptions;
    const resolve = this.#resolve;
    const pinnedLookup: LookupFunction = (hostname, lookupOptions, callback) => {
      resolveChecked(resolve, hostname, addressOptions).then(
        (addresses) => {
          const wanted = lookupOptions.family === 4 || lookupOptions.family === 6 ? lookupOptions.family : 0;
          const usable = wanted === 0 ? addresses : addresses.filter((a) => a.family === wanted);
          const first = usable[0];
          if (first === undefined) {
            const err = new EngineError('SOURCE_UNREACHABLE', `No usable address for ${hostname}.`);
            process.nextTick(callback, err, '', 0);
          } else if (lookupOptions.all) {
            process.nextTick(callback, null, usable);
          } else {
            process.nextTick(callback, null, first.address, first.family);
          }
        },
        (err: unknown) => process.nextTick(callback, err as NodeJS.ErrnoException, '', 0),
      );
    };
    const base = buildConnector({
      timeout: connectTimeoutMs,
      lookup: pinnedLookup,
      // TLS sessions are not reused across fetches: every fetch starts from a fresh handshake.
      maxCachedSessions: 0,
      ...(this.#ca === undefined ? {} : { ca: this.#ca }),
    } as buildConnector.BuildOptions);
    return (opts, callback) => {
      if (isIP(opts.hostname) !== 0) {
        const verdict = checkAddress(opts.hostname, addressOptions);
        if (!verdict.allowed) {
          callback(blocked(`The address ${opts.hostname} is not allowed (${verdict.reason}).`), null);
          return;
        }
      }
      base(opts, (err, socket) => {
        if (err !== null || socket === null) {
          callback(err ?? new EngineError('SOURCE_UNREACHABLE', 'The connection failed.'), null);
          return;
        }
        const peer = socket.remoteAddress;
        const verdict = peer === undefined ? null : checkAddress(peer, addressOptions);
        if (verdict === null || !verdict.allowed) {
          socket.destroy();
          callback(blocked('The connection reached an address that is not allowed.'), null);
          return;
        }
        callback(null, socket);
      });
    };
  }
}

/** getaddrinfo's and c-ares' codes for a lookup that failed without an answer about the name. */
const TRANSIENT_DNS_CODES = new Set(['EAI_AGAIN', 'ETIMEOUT', 'ESERVFAIL', 'ECONNREFUSED', 'ECANCELLED']);

/** Resolves a name and refuses it whole if any answer is not allowed. */
async function resolveChecked(
  resolve: LookupFn,
  hostname: string,
  addressOptions: AddressPolicyOptions,
): Promise<LookupAddress[]> {
  // "Does not resolve" and "resolves inside" get the same answer: told apart, they would let
  // a stranger map which names our resolver knows (split-horizon and internal zones).
  const refused = (hidden: unknown) =>
    new EngineError('SOURCE_ADDRESS_BLOCKED', `The host ${hostname} does not resolve to a public address.`, {
      cause: hidden,
    });
  let answers: LookupAddress[];
  try {
    answers = await resolve(hostname);
  } catch (cause) {
    // A resolver that failed for now (no answer yet, a timeout, SERVFAIL) said nothing about the
    // name, so nothing is told apart: that is worth a retry. "No such name" is an answer, and reads
    // like "resolves inside".
    const code = (cause as NodeJS.ErrnoException | undefined)?.code;
    if (code !== undefined && TRANSIENT_DNS_CODES.has(code)) {
      throw new EngineError('SOURCE_UNREACHABLE', `The name ${hostname} could not be resolved just now (${code}).`, {
        cause,
        details: { reason: code },
      });
    }
    throw refused(cause);
  }
  if (!Array.isArray(answers) || answers.length === 0) throw refused({ answers: 0 });
  // One bad answer condemns the name: a host that lists a private address next to a public one
  // is either misconfigured or probing us, and retrying on another answer is how rebinding works.
  for (const answer of answers) {
    const verdict = checkAddress(answer.address, addressOptions);
    // The resolved address stays out of the message: it may describe our own network.
    if (!verdict.allowed) throw refused({ address: answer.address, reason: verdict.reason });
  }
  return answers.map((a) => ({ address: a.address, family: a.family }));
}

interface Limits {
  maxBytes: number;
  connectTimeoutMs: number;
  firstByteTimeoutMs: number;
  idleTimeoutMs: number;
  totalTimeoutMs: number;
  maxRedirects: number;
}

function resolveLimits(options: SourceOptions): Limits {
  const pick = (name: keyof Limits, integer: boolean, min: number): number => {
    const value = options[name] ?? SOURCE_DEFAULTS[name];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
      throw new EngineError('INVALID_OPTIONS', `${name} must be a ${integer ? 'whole ' : ''}number ≥ ${min}.`, {
        details: { option: name },
      });
    }
    return value;
  };
  return {
    maxBytes: pick('maxBytes', true, 1),
    connectTimeoutMs: pick('connectTimeoutMs', false, 1),
    firstByteTimeoutMs: pick('firstByteTimeoutMs', false, 1),
    idleTimeoutMs: pick('idleTimeoutMs', false, 1),
    totalTimeoutMs: pick('totalTimeoutMs', false, 1),
    maxRedirects: pick('maxRedirects', true, 0),
  };
}

/**
 * One open() call: its own undici Agent (so the dialer, its policy and its connect timeout are
 * per fetch, and no pooled socket outlives the fetch), its own AbortController fed by the
 * caller's signal and the total clock, and the cleanup of all of it, exactly once.
 */
class FetchRun {
  readonly #limits: Limits;
  readonly #controller = new AbortController();
  readonly #agent: Agent;
  readonly #userSignal: AbortSignal | undefined;
  readonly #onUserAbort = () => this.#controller.abort(abortError(this.#userSignal, 'fetch'));
  readonly #onDone: () => void;
  #timer: NodeJS.Timeout | undefined;
  #budgetMs: number;
  #clockStartedAt = 0;
  #finished: Promise<void> | undefined;

  constructor(limits: Limits, options: SourceOptions, connect: buildConnector.connector, onDone: () => void) {
    this.#limits = limits;
    this.#onDone = onDone;
    this.#budgetMs = limits.totalTimeoutMs;
    this.#agent = new Agent({ connect, connections: 2, pipelining: 1, keepAliveTimeout: 1_000 });
    this.#userSignal = options.signal;
    this.#userSignal?.addEventListener('abort', this.#onUserAbort, { once: true });
    this.resumeClock();
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  async request(url: URL, userAgent: string): Promise<Dispatcher.ResponseData> {
    return this.#agent.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: 'GET',
      headers: { 'user-agent': userAgent, accept: '*/*', 'accept-encoding': 'identity' },
      signal: this.#controller.signal,
      headersTimeout: this.#limits.firstByteTimeoutMs,
      bodyTimeout: this.#limits.idleTimeoutMs,
    });
  }

  /** Stops the total clock while the consumer is not reading. */
  pauseClock(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#budgetMs -= performance.now() - this.#clockStartedAt;
  }

  resumeClock(): void {
    if (this.#timer !== undefined || this.#finished !== undefined) return;
    this.#clockStartedAt = performance.now();
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#controller.abort(
          new EngineError('SOURCE_TIMEOUT', `The origin took longer than ${this.#limits.totalTimeoutMs} ms.`, {
            details: { timeout: 'total', ms: this.#limits.totalTimeoutMs },
          }),
        );
      },
      Math.max(0, this.#budgetMs),
    );
  }

  /** Turns whatever undici, the DNS or the sockets threw into one EngineError. */
  mapError(err: unknown): EngineError {
    // Our own abort reasons (caller's signal, total clock, close) win over the symptom they caused.
    const reason: unknown = this.#controller.signal.reason;
    if (this.#controller.signal.aborted && isEngineError(reason)) return reason;
    for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
      if (isEngineError(e)) return e;
      e = (e as { cause?: unknown }).cause;
    }
    const code = (err as { code?: unknown } | null)?.code;
    const timeout = (kind: string, ms: number): EngineError =>
      new EngineError('SOURCE_TIMEOUT', `The origin exceeded the ${kind} timeout (${ms} ms).`, {
        cause: err,
        details: { timeout: kind, ms },
      });
    switch (code) {
      case 'UND_ERR_CONNECT_TIMEOUT':
        return timeout('connect', this.#limits.connectTimeoutMs);
      case 'UND_ERR_HEADERS_TIMEOUT':
        return timeout('first-byte', this.#limits.firstByteTimeoutMs);
      case 'UND_ERR_BODY_TIMEOUT':
        return timeout('idle', this.#limits.idleTimeoutMs);
      default: {
        // DNS failures, refusals, resets, TLS verification failures, early closes.
        const detail = typeof code === 'string' ? code : 'unknown';
        return new EngineError(
          'SOURCE_UNREACHABLE',
          `The origin could not be reached or dropped the connection (${detail}).`,
          { cause: err, details: { reason: detail } },
        );
      }
    }
  }

  /** Releases everything this fetch holds; safe to call more than once. */
  finish(error?: EngineError): Promise<void> {
    if (this.#finished !== undefined) return this.#finished;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#userSignal?.removeEventListener('abort', this.#onUserAbort);
    if (error !== undefined && !this.#controller.signal.aborted) this.#controller.abort(error);
    this.#onDone();
    this.#finished = (error === undefined ? this.#agent.close() : this.#agent.destroy()).catch(() => {});
    return this.#finished;
  }
}

/**
 * The body handed to the caller: undici's body behind the byte cap, with undici's errors turned
 * into EngineErrors and the fetch's resources released when it ends, fails or is destroyed.
 */
class SourceBody extends Readable {
  readonly #upstream: Readable;
  readonly #run: FetchRun;
  readonly #maxBytes: number;
  readonly #total: number | undefined;
  readonly #onProgress: RunOptions['onProgress'];
  #received = 0;
  #reported = 0;
  #upstreamPaused = false;

  constructor(
    upstream: Readable,
    run: FetchRun,
    maxBytes: number,
    total: number | undefined,
    onProgress: RunOptions['onProgress'],
  ) {
    super({ highWaterMark: 64 * 1024 });
    this.#upstream = upstream;
    this.#run = run;
    this.#maxBytes = maxBytes;
    this.#total = total;
    this.#onProgress = onProgress;
    // A consumer that forgets its 'error' listener must not take the process down with it;
    // consumers that read (pipeline, async iteration) still see the error.
    this.on('error', () => {});
    upstream.on('data', (chunk: Buffer) => this.#onData(chunk));
    upstream.on('end', () => {
      this.#report(true);
      void this.#run.finish();
      this.push(null);
    });
    upstream.on('error', (err) => this.destroy(this.#run.mapError(err)));
  }

  #onData(chunk: Buffer): void {
    if (this.destroyed) return;
    const received = this.#received + chunk.length;
    if (received > this.#maxBytes) {
      // The first byte over the cap ends the fetch; the chunk that carries it is not passed on.
      this.destroy(tooLarge(this.#maxBytes));
      return;
    }
    this.#received = received;
    this.#report(false);
    if (!this.push(chunk)) {
      this.#upstreamPaused = true;
      this.#upstream.pause();
      this.#run.pauseClock();
    }
  }

  #report(final: boolean): void {
    if (this.#onProgress === undefined) return;
    if (!final && this.#received - this.#reported < PROGRESS_STEP_BYTES) return;
    this.#reported = this.#received;
    const fraction = this.#total ? Math.min(1, this.#received / this.#total) : undefined;
    this.#onProgress({ stage: 'fetch', done: this.#received, ...(fraction === undefined ? {} : { fraction }) });
  }

  override _read(): void {
    if (!this.#upstreamPaused) return;
    this.#upstreamPaused = false;
    this.#run.resumeClock();
    this.#upstream.resume();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#upstream.on('error', () => {}).destroy();
    const mapped = error === null ? undefined : isEngineError(error) ? error : this.#run.mapError(error);
    // A consumer that stops early (error === null) is not an error of ours, but the fetch still ends.
    void this.#run.finish(mapped ?? new EngineError('ABORTED', 'The body was closed before it ended.'));
    callback(mapped ?? null);
  }
}

function parseContentLength(value: string | string[] | undefined): number | undefined {
  if (typeof value !== 'string' || !/^\d{1,16}$/.test(value.trim())) return undefined;
  return Number(value.trim());
}

function tooLarge(maxBytes: number, contentLength?: number): EngineError {
  return new EngineError('SOURCE_TOO_LARGE', `The source is larger than ${maxBytes} bytes.`, {
    details: { maxBytes, ...(contentLength === undefined ? {} : { contentLength }) },
  });
}

function blocked(message: string, hidden?: { address: string; reason: string }): EngineError {
  // `hidden` goes into the cause, which toJSON() leaves out: logs get it, callers do not.
  return new EngineError('SOURCE_ADDRESS_BLOCKED', message, hidden === undefined ? {} : { cause: hidden });
}
