import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Agent } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fixturesReadme, hasCorpus, needsCorpus } from '../test-support/fixtures.ts';
import { closeServer } from '../test-support/servers.ts';
import { DEFAULT_MODEL, findModel, MANIFEST, type RealModelEntry } from './manifest.ts';
import { DEFAULT_CACHE_DIR, resolveModel } from './resolve.ts';

const run = promisify(execFile);

// A real TLS origin on loopback, with a CA made for this test run: the downloader's certificate checks stay
// on, and trust comes only from the Agent handed in.
let dir: string;
let server: Server;
let origin: string;
let agent: Agent;
const payload = randomBytes(3 * 1024 * 1024 + 123);
const payloadSha = createHash('sha256').update(payload).digest('hex');
const requests: Array<{ path: string; range?: string }> = [];
/** Per-path count of requests still to cut short after this many bytes. */
const cuts = new Map<string, { after: number; times: number }>();

async function makeCerts(out: string): Promise<{ ca: Buffer; key: Buffer; cert: Buffer }> {
  const ossl = (...args: string[]) => run('openssl', args, { cwd: out });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await ossl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=models test CA');
  await ossl('req', ...ec, '-keyout', 'srv.key', '-out', 'srv.csr', '-subj', '/CN=localhost');
  await writeFile(join(out, 'san.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  await ossl(
    'x509',
    '-req',
    '-in',
    'srv.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'srv.crt',
    '-days',
    '1',
    '-extfile',
    'san.ext',
  );
  const [ca, key, cert] = await Promise.all(['ca.crt', 'srv.key', 'srv.crt'].map((f) => readFile(join(out, f))));
  return { ca: ca!, key: key!, cert: cert! };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'resolve-test-'));
  const { ca, key, cert } = await makeCerts(dir);
  server = createServer({ key, cert }, (req, res) => {
    const path = new URL(req.url ?? '/', 'https://x').pathname;
    requests.push({ path, ...(req.headers.range && { range: req.headers.range }) });
    if (path === '/moved.bin') {
      res.writeHead(302, { location: '/model.bin' }).end();
      return;
    }
    if (path !== '/model.bin' && path !== '/cut.bin' && path !== '/slow.bin') {
      res.writeHead(404).end();
      return;
    }
    let start = 0;
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    if (m) {
      start = Number(m[1]);
      if (start >= payload.length) {
        res.writeHead(416, { 'content-range': `bytes */${payload.length}` }).end();
        return;
      }
      res.writeHead(206, {
        'content-length': payload.length - start,
        'content-range': `bytes ${start}-${payload.length - 1}/${payload.length}`,
      });
    } else {
      res.writeHead(200, { 'content-length': payload.length });
    }
    const body = payload.subarray(start);
    const cut = cuts.get(path);
    if (cut && cut.times > 0) {
      cut.times--;
      // Send part of the body, then drop the connection mid-file.
      res.write(body.subarray(0, cut.after), () => setTimeout(() => res.socket?.destroy(), 20));
      return;
    }
    if (path === '/slow.bin') {
      let off = 0;
      const tick = () => {
        if (res.destroyed) return;
        if (off >= body.length) return void res.end();
        res.write(body.subarray(off, off + 64 * 1024));
        off += 64 * 1024;
        setTimeout(tick, 10);
      };
      tick();
      return;
    }
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `https://localhost:${(server.address() as AddressInfo).port}`;
  agent = new Agent({ connect: { ca } });
});

afterAll(async () => {
  await agent?.close();
  await closeServer(server);
  await rm(dir, { recursive: true, force: true });
});

let cacheDir: string;
beforeEach(async () => {
  requests.length = 0;
  cuts.clear();
  cacheDir = await mkdtemp(join(dir, 'cache-'));
});

function entry(over: Partial<RealModelEntry> = {}): RealModelEntry {
  return {
    kind: 'real',
    name: 'test-model',
    file: 'ggml-test-model.bin',
    bytes: payload.length,
    bytesVerified: true,
    sha256: payloadSha,
    sha1: null,
    url: `${origin}/model.bin`,
    hparams: findModel('tiny')!.hparams,
    ...over,
  };
}

const opts = (e: RealModelEntry, more: Parameters<typeof resolveModel>[1] = {}) => ({
  cacheDir,
  entries: [e],
  dispatcher: agent,
  ...more,
});

describe('download', () => {
  it('downloads over TLS, verifies, reports progress, then serves from the cache', async () => {
    const seen: number[] = [];
    const got = await resolveModel('test-model', opts(entry(), { onProgress: (p) => seen.push(p.received) }));
    expect(got).toMatchObject({ name: 'test-model', synthetic: false, path: join(cacheDir, 'ggml-test-model.bin') });
    expect(got.warning).toBeUndefined();
    expect((await readFile(got.path)).equals(payload)).toBe(true);
    expect(seen.at(-1)).toBe(payload.length);
    expect(seen.every((v, i) => i === 0 || v >= seen[i - 1]!)).toBe(true);
    expect(await readdir(cacheDir)).toEqual(['ggml-test-model.bin']);

    requests.length = 0;
    const again = await resolveModel('ggml-test-model.bin', opts(entry()));
    expect(again.path).toBe(got.path);
    expect(requests).toEqual([]);
  });

  it('follows redirects (the hub answers with one to its CDN)', async () => {
    const got = await resolveModel('test-model', opts(entry({ url: `${origin}/moved.bin` })));
    expect((await stat(got.path)).size).toBe(payload.length);
    expect(requests.map((r) => r.path)).toEqual(['/moved.bin', '/model.bin']);
  });

  it('an interrupted download leaves a .part file; the next resolve resumes it with a Range request', async () => {
    cuts.set('/cut.bin', { after: 1_000_000, times: 1 });
    const e = entry({ url: `${origin}/cut.bin` });
    const err = await resolveModel('test-model', opts(e, { retries: 0 })).catch((x: unknown) => x);
    expect(err).toMatchObject({ code: 'MODEL_NOT_AVAILABLE' });
    const part = join(cacheDir, 'ggml-test-model.bin.part');
    const have = (await stat(part)).size;
    // What arrived before the reset (the socket may drop some of the 1 MB in flight).
    expect(have).toBeGreaterThan(0);
    expect(have).toBeLessThanOrEqual(1_000_000);
    expect(have).toBeLessThan(payload.length);

    requests.length = 0;
    const got = await resolveModel('test-model', opts(e));
    expect(requests).toEqual([{ path: '/cut.bin', range: `bytes=${have}-` }]);
    expect((await readFile(got.path)).equals(payload)).toBe(true);
    expect(existsSync(part)).toBe(false);
  });

  it('within one resolve, a dropped connection is retried from where it stopped', async () => {
    cuts.set('/cut.bin', { after: 700_000, times: 2 });
    const got = await resolveModel('test-model', opts(entry({ url: `${origin}/cut.bin` })));
    expect((await readFile(got.path)).equals(payload)).toBe(true);
    expect(requests).toHaveLength(3);
    expect(requests[0]!.range).toBeUndefined();
    expect(requests[1]!.range).toMatch(/^bytes=[1-9]\d*-$/);
    expect(Number(/\d+/.exec(requests[2]!.range!)![0])).toBeGreaterThan(Number(/\d+/.exec(requests[1]!.range!)![0]));
  });

  it('a sha256 mismatch gives MODEL_CHECKSUM_MISMATCH and removes the partial file', async () => {
    const e = entry({ sha256: 'f'.repeat(64) });
    await expect(resolveModel('test-model', opts(e))).rejects.toMatchObject({ code: 'MODEL_CHECKSUM_MISMATCH' });
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it('a body longer than the manifest says is cut off at the cap and removed', async () => {
    const e = entry({ bytes: payload.length - 1000 });
    await expect(resolveModel('test-model', opts(e))).rejects.toMatchObject({ code: 'MODEL_CHECKSUM_MISMATCH' });
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it('without a sum in the manifest, checks the size and says the sum was not verified', async () => {
    const got = await resolveModel('test-model', opts(entry({ sha256: null })));
    expect(got.warning).toMatch(/no sha256 or SHA-1.*only its size was verified/);
    expect((await stat(got.path)).size).toBe(payload.length);
  });

  it('with only a published SHA-1 (whisper.cpp quantized files), checks that; a mismatch removes the file', async () => {
    const sha1 = createHash('sha1').update(payload).digest('hex');
    const got = await resolveModel('test-model', opts(entry({ sha256: null, sha1 })));
    expect(got.warning).toBeUndefined();
    expect((await stat(got.path)).size).toBe(payload.length);
    await rm(got.path);
    const bad = resolveModel('test-model', opts(entry({ sha256: null, sha1: '0'.repeat(40) })));
    await expect(bad).rejects.toMatchObject({
      code: 'MODEL_CHECKSUM_MISMATCH',
      message: /sha1 [0-9a-f]{40}, expected 0{40}/,
    });
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it('concurrent resolves of one model share one download', async () => {
    const [a, b] = await Promise.all([
      resolveModel('test-model', opts(entry())),
      resolveModel('test-model', opts(entry())),
    ]);
    expect(a.path).toBe(b.path);
    expect(requests).toHaveLength(1);
  });

  it('abort: one waiter leaving does not stop the other; the last one leaving stops the download', async () => {
    const e = entry({ url: `${origin}/slow.bin` });
    const ac = new AbortController();
    const leaving = resolveModel('test-model', opts(e, { signal: ac.signal }));
    const staying = resolveModel('test-model', opts(e));
    setTimeout(() => ac.abort(), 50);
    await expect(leaving).rejects.toMatchObject({ code: 'ABORTED' });
    expect((await readFile((await staying).path)).equals(payload)).toBe(true);

    const other = await mkdtemp(join(dir, 'cache-'));
    const ac2 = new AbortController();
    const alone = resolveModel('test-model', { ...opts(e, { signal: ac2.signal }), cacheDir: other });
    // Abort once some bytes are in the .part file (a fixed wait may see none on a busy machine).
    await expect.poll(() => partBytes(other)).toBeGreaterThan(0);
    ac2.abort();
    // A caller arriving while the abandoned download winds down gets a fresh one, not its ABORTED.
    const again = resolveModel('test-model', { ...opts(e), cacheDir: other });
    await expect(alone).rejects.toMatchObject({ code: 'ABORTED' });
    expect((await readFile((await again).path)).equals(payload)).toBe(true);
    // The bytes that arrived before the abort stayed in the .part file and were resumed, not fetched again.
    expect(requests.at(-1)?.range).toMatch(/^bytes=[1-9]\d*-$/);
  });
});

describe('not available', () => {
  it('download disabled: MODEL_NOT_AVAILABLE naming the URL, the sha256 and exactly where to put the file', async () => {
    const err = await resolveModel('large-v3', { cacheDir, download: false }).catch((x: unknown) => x);
    const want = findModel('large-v3') as RealModelEntry;
    expect(err).toMatchObject({ code: 'MODEL_NOT_AVAILABLE' });
    const msg = (err as Error).message;
    expect(msg).toContain('https://huggingface.co/ggerganov/whisper.cpp/resolve/main/ggml-large-v3.bin');
    expect(msg).toContain(want.sha256!);
    expect(msg).toContain(join(cacheDir, 'ggml-large-v3.bin'));
  });

  it('unreachable origin: MODEL_NOT_AVAILABLE naming URL and path; no file left behind', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const e = entry({ url: `https://127.0.0.1:${port}/ggml-test-model.bin` });
    const err = await resolveModel('test-model', opts(e, { retries: 0 })).catch((x: unknown) => x);
    expect(err).toMatchObject({ code: 'MODEL_NOT_AVAILABLE' });
    expect((err as Error).message).toContain(e.url);
    expect((err as Error).message).toContain(join(cacheDir, 'ggml-test-model.bin'));
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it('TLS is checked: without the test CA the origin is refused', async () => {
    const { dispatcher: _, ...noCa } = opts(entry(), { retries: 0 });
    const err = await resolveModel('test-model', noCa).catch((x: unknown) => x);
    expect(err).toMatchObject({ code: 'MODEL_NOT_AVAILABLE' });
    expect(requests).toEqual([]);
  });

  it('HTTP 404: MODEL_NOT_AVAILABLE with the status', async () => {
    const e = entry({ url: `${origin}/gone.bin` });
    await expect(resolveModel('test-model', opts(e))).rejects.toMatchObject({
      code: 'MODEL_NOT_AVAILABLE',
      message: expect.stringContaining('HTTP 404'),
    });
  });

  it('unknown names and missing paths give MODEL_UNKNOWN; an explicit file path is used as is', async () => {
    await expect(resolveModel('no-such-model', { cacheDir })).rejects.toMatchObject({ code: 'MODEL_UNKNOWN' });
    await expect(resolveModel(join(dir, 'missing.bin'), { cacheDir })).rejects.toMatchObject({
      code: 'MODEL_UNKNOWN',
    });
    const mine = join(dir, 'my-model.bin');
    await writeFile(mine, 'x');
    expect(await resolveModel(mine, { cacheDir })).toEqual({ name: 'my-model.bin', path: mine, synthetic: false });
  });

  it('a cached file of the wrong size is reported, not used', async () => {
    await mkdir(cacheDir, { recursive: true });
    await writeFile(join(cacheDir, 'ggml-test-model.bin'), 'short');
    await expect(resolveModel('test-model', opts(entry()))).rejects.toMatchObject({
      code: 'MODEL_CHECKSUM_MISMATCH',
    });
  });
});

describe('synthetic and manifest', () => {
  it('resolveModel("synthetic-tiny") generates into the cache once, shared by concurrent callers', async () => {
    const [a, b] = await Promise.all([
      resolveModel('synthetic-tiny', { cacheDir }),
      resolveModel('synthetic-tiny', { cacheDir }),
    ]);
    expect(a).toMatchObject({
      name: 'synthetic-tiny',
      synthetic: true,
      path: join(cacheDir, 'ggml-synthetic-tiny.bin'),
    });
    expect(b.path).toBe(a.path);
    expect(await readdir(cacheDir)).toEqual(['ggml-synthetic-tiny.bin']);
    expect((await stat(a.path)).size).toBe(77691713);
  });

  // The published sizes and sums are recorded in the corpus' README; the manifest must carry them.
  it.skipIf(!hasCorpus())(
    needsCorpus('the manifest carries the published sizes and sums from the fixtures README'),
    async () => {
      const readme = await readFile(fixturesReadme(), 'utf8');
      const rows = [...readme.matchAll(/^\| (ggml-[\w.-]+\.bin) \| (\d+) \| ([0-9a-f]{64}) \|$/gm)];
      expect(rows.length).toBe(6);
      for (const [, file, bytes, sum] of rows) {
        const e = MANIFEST.find((m) => m.file === file);
        expect(e, file).toMatchObject({ kind: 'real', bytes: Number(bytes), sha256: sum, bytesVerified: true });
      }
    },
  );

  it('the manifest has large-v3 as default, the hub URL for every real model, and the cache under models/', () => {
    expect(DEFAULT_MODEL).toBe('large-v3');
    for (const e of MANIFEST) {
      if (e.kind === 'real') expect(e.url).toBe(`https://huggingface.co/ggerganov/whisper.cpp/resolve/main/${e.file}`);
      if (e.kind === 'real' && e.sha256 === null) expect(e.bytesVerified).toBe(false);
    }
    expect(DEFAULT_CACHE_DIR).toMatch(/models[/\\]cache$/);
  });
});

/** Bytes in the `.part` files under `dir`. */
async function partBytes(dir: string): Promise<number> {
  let n = 0;
  for (const f of await readdir(dir, { recursive: true })) {
    if (f.endsWith('.part')) n += (await stat(join(dir, f)).catch(() => ({ size: 0 }))).size;
  }
  return n;
}
