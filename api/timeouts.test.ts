/**
 * The server's own clocks over real sockets: a client that trickles its headers, trickles its
 * body or idles on a kept-alive connection is cut off. The timeouts are set small here (a few
 * hundred ms) and the tests wait for the socket's close event, not for a time.
 */

import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, testConfig } from './testing/harness.ts';

describe('request, header and keep-alive timeouts', () => {
  let t: TestApp;
  let port: number;

  beforeAll(async () => {
    const config = testConfig();
    t = await startTestApp({ ...config, timeouts: { requestMs: 600, headersMs: 300, keepAliveMs: 200 } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
  });
  afterAll(() => t.close());

  /** Opens a socket, writes `first`, and resolves with what the server sent once it closes. */
  function exchange(first: string): { socket: Socket; closed: Promise<string> } {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (d) => {
      received += d.toString();
    });
    socket.write(first);
    const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(received)));
    return { socket, closed };
  }

  it('closes a connection whose headers never end (408)', async () => {
    const { closed } = exchange('GET /api/health HTTP/1.1\r\nHost: a\r\nX-Slow: ');
    expect(await closed).toMatch(/^HTTP\/1\.1 408/);
  });

  it('closes a connection whose body trickles in past the request timeout (408)', async () => {
    const { socket, closed } = exchange(
      'POST /api/auth/signup HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{',
    );
    // One byte at a time, well inside any idle timeout, for as long as the server lets it.
    const drip = setInterval(() => socket.writable && socket.write(' '), 50);
    try {
      expect(await closed).toMatch(/HTTP\/1\.1 408/);
    } finally {
      clearInterval(drip);
    }
  });

  it('closes an idle kept-alive connection after a complete request', async () => {
    const { closed } = exchange('GET /api/health HTTP/1.1\r\nHost: a\r\n\r\n');
    const received = await closed;
    expect(received).toMatch(/^HTTP\/1\.1 200/);
    // The server offered to keep the connection, then closed it on its own clock.
    expect(received).toMatch(/connection: keep-alive/i);
  });
});
