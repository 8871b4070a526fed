/**
 * Each request's logger, built from pino only when the request logs something: most requests
 * (health probes, whose access lines are off) log nothing, and a pino child costs every request.
 */

import type { FastifyBaseLogger, LogLevel } from 'fastify';

type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildLoggerOptions = NonNullable<Parameters<FastifyBaseLogger['child']>[1]>;

type Level = Exclude<LogLevel, 'silent'>;

/**
 * Fastify's `childLoggerFactory`: a stand-in that makes `logger.child(bindings)` on first use,
 * so every line a request logs still carries its `reqId`. A route with its own level or
 * serializers gets its child at once, as Fastify would make it.
 */
export function lazyChildLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  opts: ChildLoggerOptions,
): FastifyBaseLogger {
  if (opts.level !== undefined || opts.serializers !== undefined) return logger.child(bindings, opts);
  // Its methods take pino's arguments as they come (LogFn's overloads), so the type is asserted.
  return new LazyChildLogger(logger, bindings) as unknown as FastifyBaseLogger;
}

class LazyChildLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings) {
    this.#parent = parent;
    this.#bindings = bindings;
  }

  #real(): FastifyBaseLogger {
    this.#child ??= this.#parent.child(this.#bindings);
    return this.#child;
  }

  /** A level the parent has off needs no child: pino's method for it does nothing. */
  #log(level: Level, args: unknown[]): void {
    if (this.#child === undefined && !isLevelEnabled(this.#parent, level)) return;
    const child = this.#real();
    Reflect.apply(child[level], child, args);
  }

  get level(): string {
    return (this.#child ?? this.#parent).level;
  }

  set level(level: string) {
    this.#real().level = level;
  }

  fatal(...args: unknown[]): void {
    this.#log('fatal', args);
  }
  error(...args: unknown[]): void {
    this.#log('error', args);
  }
  warn(...args: unknown[]): void {
    this.#log('warn', args);
  }
  info(...args: unknown[]): void {
    this.#log('info', args);
  }
  debug(...args: unknown[]): void {
    this.#log('debug', args);
  }
  trace(...args: unknown[]): void {
    this.#log('trace', args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#real().child(bindings, options);
  }
}

/** pino's `isLevelEnabled`; a logger without one (not pino) is taken to have every level on. */
function isLevelEnabled(logger: FastifyBaseLogger, level: Level): boolean {
  const { isLevelEnabled } = logger as { isLevelEnabled?: (level: string) => boolean };
  return isLevelEnabled === undefined || isLevelEnabled.call(logger, level);
}
