/**
 * Request loggers made on first use: a request that logs nothing gets no pino child, and every
 * line a request does log still carries its reqId (access lines, errors, lines of our own).
 */

import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lazyChildLogger } from './request-logger.ts';
import { startTestApp, type TestApp, testConfig } from './testing/harness.ts';

type Line = Record<string, unknown>;

/** A pino logger (Fastify's own) writing parsed lines into `lines`. */
function capture(level = 'info'): { lines: Line[]; log: ReturnType<typeof Fastify>['log'] } {
  const lines: Line[] = [];
  const app = Fastify({ logger: { level, stream: { write: (l: string) => void lines.push(JSON.parse(l)) } } });
  return { lines, log: app.log };
}

describe('lazyChildLogger', () => {
  it('makes the child on the first line, and every line carries the bindings', () => {
    const { lines, log } = capture();
    let made = 0;
    const parent = new Proxy(log, {
      get(target, key, receiver) {
        if (key === 'child') {
          return (...args: Parameters<typeof log.child>) => {
            made++;
            return target.child(...args);
          };
        }
        return Reflect.get(target, key, receiver);
      },
    });
    const child = lazyChildLogger(parent, { reqId: 'req-1' }, {});
    expect(made).toBe(0);
    child.info({ videoId: 'v1' }, 'first');
    child.warn('second %s', 'formatted');
    expect(made).toBe(1);
    expect(lines).toMatchObject([
      { level: 30, reqId: 'req-1', videoId: 'v1', msg: 'first' },
      { level: 40, reqId: 'req-1', msg: 'second formatted' },
    ]);
  });

  it('makes no child for a level that is off, and reads the level from the parent', () => {
    const { lines, log } = capture('info');
    const child = lazyChildLogger(log, { reqId: 'req-2' }, {});
    child.debug('not written');
    child.trace('not written either');
    expect(lines).toEqual([]);
    expect(child.level).toBe('info');
  });

  it("gives grandchildren the request's bindings and their own", () => {
    const { lines, log } = capture();
    lazyChildLogger(log, { reqId: 'req-3' }, {}).child({ job: 'j1' }).error('failed');
    expect(lines).toMatchObject([{ level: 50, reqId: 'req-3', job: 'j1', msg: 'failed' }]);
  });

  it('makes the child at once for a route with a level of its own', () => {
    const { lines, log } = capture('info');
    const child = lazyChildLogger(log, { reqId: 'req-4' }, { level: 'debug' });
    child.debug('written at debug');
    expect(child.level).toBe('debug');
    expect(lines).toMatchObject([{ level: 20, reqId: 'req-4', msg: 'written at debug' }]);
  });
});

describe('request logging through the app', () => {
  let t: TestApp;
  const lines: Line[] = [];
  beforeAll(async () => {
    t = await startTestApp(testConfig(), {
      logger: { level: 'info', stream: { write: (l: string) => void lines.push(JSON.parse(l)) } },
    });
  });
  afterAll(() => t.close());

  it('logs nothing for a health probe', async () => {
    lines.length = 0;
    const res = await t.app.inject({ url: '/api/health' });
    expect(res.statusCode).toBe(200);
    expect(lines).toEqual([]);
  });

  it('logs both access lines of any other request, with one reqId', async () => {
    lines.length = 0;
    const res = await t.app.inject({ url: '/api/no-such-route' });
    expect(res.statusCode).toBe(404);
    const incoming = lines.find((l) => l.msg === 'incoming request');
    const completed = lines.find((l) => l.msg === 'request completed');
    expect(incoming?.reqId).toEqual(expect.any(String));
    expect(completed).toMatchObject({ reqId: incoming?.reqId, res: { statusCode: 404 } });
  });
});
