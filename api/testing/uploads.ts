/**
 * Test-only helpers for the data plane: a real recording made with ffmpeg from given audio, a
 * TCP proxy that cuts the first connection carrying more than N bytes (a dropped network,
 * for real TUS resumes), and a real tus-js-client upload.
 */

import { execFile } from 'node:child_process';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as tus from 'tus-js-client';

const run = promisify(execFile);

/** A WebM (VP8 + Opus) of `seconds` of test pattern over `audioPath`'s audio; Chromium plays it. */
export async function makeRecording(dir: string, audioPath: string, seconds = 11): Promise<string> {
  const out = join(dir, 'recording.webm');
  await run('ffmpeg', [
    '-nostdin',
    '-v',
    'error',
    '-f',
    'lavfi',
    '-i',
    `testsrc=size=160x120:rate=10:duration=${seconds}`,
    '-i',
    audioPath,
    '-t',
    String(seconds),
    '-c:v',
    'libvpx',
    '-b:v',
    '200k',
    '-c:a',
    'libopus',
    '-y',
    out,
  ]);
  return out;
}

/** Forwards to `port`; the first connection to send more than `cutAfterBytes` upstream is destroyed. */
export class CuttingProxy {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  cuts = 0;
  #armed: boolean;

  constructor(targetPort: number, cutAfterBytes: number) {
    this.#armed = true;
    this.#server = createServer((client) => {
      const upstream = connect(targetPort, '127.0.0.1');
      this.#sockets.add(client).add(upstream);
      let sent = 0;
      client.on('data', (chunk: Buffer) => {
        sent += chunk.length;
        if (this.#armed && sent > cutAfterBytes) {
          this.#armed = false;
          this.cuts++;
          client.destroy();
          upstream.destroy();
          return;
        }
        upstream.write(chunk);
      });
      upstream.pipe(client);
      const end = () => {
        client.destroy();
        upstream.destroy();
        this.#sockets.delete(client);
        this.#sockets.delete(upstream);
      };
      client.on('close', end).on('error', end);
      upstream.on('close', end).on('error', end);
    });
  }

  async listen(): Promise<number> {
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.1', r));
    return (this.#server.address() as { port: number }).port;
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise((r) => this.#server.close(r));
  }
}

export interface TusRequestLog {
  method: string;
  offset: string | undefined;
}

/** Uploads `bytes` with tus-js-client; resolves with the requests it made (method, Upload-Offset). */
export async function tusUpload(
  endpoint: string,
  headers: Record<string, string>,
  bytes: Buffer,
  opts: { chunkSize?: number } = {},
): Promise<{ url: string; requests: TusRequestLog[] }> {
  const requests: TusRequestLog[] = [];
  return new Promise((resolve, reject) => {
    const upload = new tus.Upload(bytes, {
      endpoint,
      headers,
      chunkSize: opts.chunkSize ?? 64 * 1024,
      retryDelays: [0, 10, 50],
      metadata: { filename: 'recording.webm' },
      onBeforeRequest(req) {
        requests.push({ method: req.getMethod(), offset: req.getHeader('Upload-Offset') });
      },
      onError: reject,
      onSuccess: () => resolve({ url: upload.url!, requests }),
    });
    upload.start();
  });
}
