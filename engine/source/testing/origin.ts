/**
 * Test-only: real HTTPS origins on a chosen address, with per-path handlers and a count of every
 * TCP connection they accept (the evidence that a blocked fetch never dialed).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

export type Handler = (req: IncomingMessage, res: ServerResponse, origin: TestOrigin) => void;

export interface TestOrigin {
  server: Server;
  port: number;
  /** `https://host:port` for the address the origin listens on. */
  base: string;
  /** Every accepted TCP connection, in order, with the local address it was made to. */
  connections: Array<{ localAddress: string | undefined }>;
  sockets: Set<Socket>;
  routes: Map<string, Handler>;
  /** Resolves when the next request for `path` has closed its connection. */
  close(): Promise<void>;
}

export async function startOrigin(opts: {
  key: string;
  cert: string;
  host?: string;
  port?: number;
  ipv6Only?: boolean;
}): Promise<TestOrigin> {
  const routes = new Map<string, Handler>();
  const connections: TestOrigin['connections'] = [];
  const sockets = new Set<Socket>();
  const server = createServer({ key: opts.key, cert: opts.cert }, (req, res) => {
    const path = new URL(req.url ?? '/', 'https://x').pathname;
    const handler = routes.get(path);
    if (handler === undefined) {
      res.writeHead(404).end('no route');
      return;
    }
    handler(req, res, origin);
  });
  server.on('connection', (socket: Socket) => {
    connections.push({ localAddress: socket.localAddress });
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  // A client that fails the TLS handshake (untrusted cert tests) is expected noise.
  server.on('tlsClientError', () => {});
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port: opts.port ?? 0, ipv6Only: opts.ipv6Only ?? false }, resolve);
  });
  const port = (server.address() as AddressInfo).port;
  const origin: TestOrigin = {
    server,
    port,
    base: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    connections,
    sockets,
    routes,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return origin;
}

/** Streams `size` bytes of a repeating pattern, chunked or with Content-Length, honouring backpressure. */
export function sendBytes(res: ServerResponse, size: number, chunked: boolean, chunkSize = 256 * 1024): void {
  const block = Buffer.alloc(chunkSize, 0x61);
  res.writeHead(
    200,
    chunked
      ? { 'content-type': 'application/octet-stream' }
      : {
          'content-type': 'application/octet-stream',
          'content-length': String(size),
        },
  );
  let left = size;
  const pump = (): void => {
    while (left > 0) {
      const n = Math.min(left, block.length);
      left -= n;
      if (!res.write(n === block.length ? block : block.subarray(0, n))) {
        res.once('drain', pump);
        return;
      }
    }
    res.end();
  };
  res.on('close', () => {
    left = 0;
  });
  pump();
}
