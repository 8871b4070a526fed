/**
 * The paid endpoint's HTTP behaviour: a real x402 client (@x402/fetch + @x402/evm, a local
 * test key) pays a real local facilitator that checks signatures. The transcriber here is
 * the harness's STAND-IN, so these tests pin the payment flow itself; e2e.test.ts runs the
 * same payment against the real engine.
 */

import { x402Client, x402HTTPClient } from '@x402/core/client';
import { decodePaymentResponseHeader } from '@x402/core/http';
import { toClientEvmSigner } from '@x402/evm';
import { ExactEvmSchemeV1 } from '@x402/evm/v1';
import { wrapFetchWithPayment } from '@x402/fetch';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { EngineError } from '../../engine/errors.ts';
import { TEST_REDIS_URL } from '../../test-support/services.ts';
import type { SqlStorage } from '../storage/sql.ts';
import { LocalFacilitator } from '../testing/facilitator.ts';
import { PAY_TO, StandInTranscriber, startTestApp, type TestApp, testConfig, testStorage } from '../testing/harness.ts';
import { paymentId } from '../x402/payment.ts';

const SOURCE = 'https://media.example.com/talk.mp3';
// biome-ignore lint/suspicious/noExplicitAny: JSON bodies are checked field by field
const json = (res: Response): Promise<any> => res.json();
const account = privateKeyToAccount(generatePrivateKey());
const payer = new x402Client().registerV1('base-sepolia', new ExactEvmSchemeV1(toClientEvmSigner(account)));
const httpPayer = new x402HTTPClient(payer);

describe('POST /api/agent/transcribe (x402 v1)', () => {
  let storage: SqlStorage;
  let facilitator: LocalFacilitator;
  let t: TestApp;
  let base: string;
  const transcriber = new StandInTranscriber();

  beforeAll(async () => {
    storage = await testStorage();
    facilitator = await new LocalFacilitator().start();
    t = await startTestApp(
      testConfig({
        X402_PAY_TO: PAY_TO,
        X402_FACILITATOR_URL: facilitator.url,
        PUBLIC_URL: 'http://agent.example.test',
        RATE_LIMIT_TRANSCRIBE_MAX: '1000',
      }),
      { storage, transcriber },
    );
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await t?.close();
    await storage?.close();
    await facilitator?.close();
  });
  beforeEach(() => {
    transcriber.calls = [];
    transcriber.fail = null;
    transcriber.delayMs = 0;
    transcriber.aborted = 0;
    facilitator.failSettle = null;
  });

  const post = (body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) =>
    fetch(`${base}/api/agent/transcribe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      ...(signal ? { signal } : {}),
    });

  /** What a client would put in X-PAYMENT after reading our 402. */
  async function signedPayment(): Promise<string> {
    const res = await post({ sourceUrl: SOURCE });
    expect(res.status).toBe(402);
    const required = httpPayer.getPaymentRequiredResponse((n) => res.headers.get(n), await json(res));
    const payload = await payer.createPaymentPayload(required);
    return httpPayer.encodePaymentSignatureHeader(payload)['X-PAYMENT']!;
  }

  it('tells the price and terms', async () => {
    const res = await fetch(`${base}/api/agent/transcribe`);
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({
      price: { amount: '0.05', currency: 'USDC', decimals: 6, baseUnits: '50000' },
      protocol: 'x402',
      x402Version: 1,
      enabled: true,
      paymentsEnabled: true,
      network: 'base-sepolia',
      asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
    });
  });

  it.each([
    [{}, 'VALIDATION_FAILED'],
    [{ sourceUrl: 'http://media.example.com/a.mp3' }, 'SOURCE_SCHEME_NOT_ALLOWED'],
    [{ sourceUrl: 'https://127.0.0.1/a.mp3' }, 'SOURCE_ADDRESS_BLOCKED'],
    [{ sourceUrl: 'https://[::ffff:10.0.0.1]/a.mp3' }, 'SOURCE_URL_INVALID'],
    // Stricter URLs: one spelling per address, port 443, no localhost by any name, no `@` or `\`.
    [{ sourceUrl: 'https://[::ffff:8.8.8.8]/a.mp3' }, 'SOURCE_URL_INVALID'],
    [{ sourceUrl: 'https://[64:ff9b::808:808]/a.mp3' }, 'SOURCE_URL_INVALID'],
    [{ sourceUrl: 'https://media.example.com:8443/a.mp3' }, 'SOURCE_PORT_NOT_ALLOWED'],
    [{ sourceUrl: 'https://media.example.com:0/a.mp3' }, 'SOURCE_URL_INVALID'],
    [{ sourceUrl: 'https://media.example.com\\@evil.example/a.mp3' }, 'SOURCE_URL_INVALID'],
    [{ sourceUrl: 'https://@media.example.com/a.mp3' }, 'SOURCE_URL_INVALID'],
    [{ sourceUrl: 'https://LOCALHOST./a.mp3' }, 'SOURCE_ADDRESS_BLOCKED'],
    [{ sourceUrl: 'https://media.localhost/a.mp3' }, 'SOURCE_ADDRESS_BLOCKED'],
    [{ sourceUrl: 'https://localhost.localdomain/a.mp3' }, 'SOURCE_ADDRESS_BLOCKED'],
    [{ sourceUrl: 'https://169.254.169.254/latest' }, 'SOURCE_ADDRESS_BLOCKED'],
    [{ sourceUrl: 'https://localhost/a.mp3' }, 'SOURCE_ADDRESS_BLOCKED'],
    [{ sourceUrl: 'https://user:pw@media.example.com/a.mp3' }, 'SOURCE_URL_INVALID'],
  ])('answers 400 for %j before any payment talk', async (body, code) => {
    const res = await post(body, { 'X-PAYMENT': 'garbage' });
    expect(res.status).toBe(400);
    expect((await json(res)).code).toBe(code);
    expect(facilitator.verifyCalls).toBe(0);
  });

  it('answers 402 with the x402 v1 requirements when X-PAYMENT is missing', async () => {
    const res = await post({ sourceUrl: SOURCE });
    expect(res.status).toBe(402);
    const body = await json(res);
    expect(body).toMatchObject({
      x402Version: 1,
      error: expect.any(String),
      code: 'PAYMENT_REQUIRED',
      statusCode: 402,
    });
    expect(body.accepts).toEqual([
      {
        scheme: 'exact',
        network: 'base-sepolia',
        maxAmountRequired: '50000',
        asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
        payTo: PAY_TO,
        resource: 'http://agent.example.test/api/agent/transcribe',
        description: expect.any(String),
        mimeType: 'application/json',
        maxTimeoutSeconds: 300,
        extra: { name: 'USDC', version: '2' },
      },
    ]);
  });

  it('pays with a real x402 client: 402 → 200 with X-PAYMENT-RESPONSE, settled once', async () => {
    const paidFetch = wrapFetchWithPayment(fetch, payer);
    const before = facilitator.settlements.length;
    const res = await paidFetch(`${base}/api/agent/transcribe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sourceUrl: SOURCE, language: 'en' }),
    });
    expect(res.status).toBe(200);
    expect((await json(res)).segments).toHaveLength(1);
    const settlement = decodePaymentResponseHeader(res.headers.get('x-payment-response')!);
    expect(settlement).toMatchObject({ success: true, network: 'base-sepolia', payer: account.address });
    expect(facilitator.settlements.slice(before)).toEqual([
      expect.objectContaining({ payer: account.address, value: '50000', transaction: settlement.transaction }),
    ]);
    expect(transcriber.calls).toEqual([expect.objectContaining({ sourceUrl: SOURCE, policy: { mode: 'public' } })]);
    const s = facilitator.settlements.at(-1)!;
    const id = paymentId({
      network: 'base-sepolia',
      payload: { authorization: { from: s.payer, nonce: s.nonce } },
    } as never);
    expect(await storage.getPayment(id)).toMatchObject({ transaction: settlement.transaction, amount: '50000' });
  });

  it('runs a payment replayed concurrently once and charges it once', async () => {
    const header = await signedPayment();
    transcriber.delayMs = 200;
    const before = facilitator.settlements.length;
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => post({ sourceUrl: SOURCE }, { 'X-PAYMENT': header })),
    );
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409, 409, 409, 409]);
    expect(transcriber.calls).toHaveLength(1);
    expect(facilitator.settlements.length - before).toBe(1);
    // And later, sequentially: still refused.
    const again = await post({ sourceUrl: SOURCE }, { 'X-PAYMENT': header });
    expect(again.status).toBe(409);
    expect((await json(again)).code).toBe('PAYMENT_REPLAYED');
  });

  it('rejects a payment whose signature does not cover what it claims (facilitator verify)', async () => {
    const header = await signedPayment();
    const p = JSON.parse(Buffer.from(header, 'base64').toString());
    // Still within our window, but not what was signed.
    p.payload.authorization.validBefore = String(Number(p.payload.authorization.validBefore) - 1);
    const res = await post({ sourceUrl: SOURCE }, { 'X-PAYMENT': Buffer.from(JSON.stringify(p)).toString('base64') });
    expect(res.status).toBe(402);
    const body = await json(res);
    expect(body).toMatchObject({
      code: 'PAYMENT_INVALID',
      x402Version: 1,
      details: { reason: 'invalid_exact_evm_payload_signature' },
    });
    expect(body.accepts).toHaveLength(1);
    expect(transcriber.calls).toHaveLength(0);
  });

  it.each<[string, (a: Record<string, string>) => unknown, string]>([
    ['payTo', (a: Record<string, string>) => (a.to = `0x${'9'.repeat(40)}`), 'wrong payee'],
    ['amount', (a: Record<string, string>) => (a.value = '1'), 'wrong amount'],
    [
      'expiry',
      (a: Record<string, string>) => (a.validBefore = String(Math.floor(Date.now() / 1000) + 5)),
      'authorization expires too soon',
    ],
    ...[20, 30, 60].map(
      (days) =>
        [
          `validBefore (${days} days ahead)`,
          (a: Record<string, string>) => (a.validBefore = String(Math.floor(Date.now() / 1000) + days * 86_400)),
          'authorization valid for longer than maxTimeoutSeconds (300 s)',
        ] as [string, (a: Record<string, string>) => unknown, string],
    ),
  ])('rejects a payment with the wrong %s before the facilitator', async (_what, mutate, reason) => {
    const header = await signedPayment();
    const p = JSON.parse(Buffer.from(header, 'base64').toString());
    mutate(p.payload.authorization);
    const verifies = facilitator.verifyCalls;
    const res = await post({ sourceUrl: SOURCE }, { 'X-PAYMENT': Buffer.from(JSON.stringify(p)).toString('base64') });
    expect(res.status).toBe(402);
    expect((await json(res)).details.reason).toBe(reason);
    expect(facilitator.verifyCalls).toBe(verifies);
  });

  it('answers 502 and settles nothing when the source fails; the payment can then be retried', async () => {
    const header = await signedPayment();
    transcriber.fail = new EngineError('SOURCE_UNREACHABLE', 'connection refused');
    const before = facilitator.settleCalls;
    const res = await post({ sourceUrl: SOURCE }, { 'X-PAYMENT': header });
    expect(res.status).toBe(502);
    expect(res.headers.get('x-payment-response')).toBeNull();
    expect((await json(res)).code).toBe('SOURCE_UNREACHABLE');
    expect(facilitator.settleCalls).toBe(before);
    transcriber.fail = null;
    const retry = await post({ sourceUrl: SOURCE }, { 'X-PAYMENT': header });
    expect(retry.status).toBe(200);
  });

  it('keeps the claim of a payment whose source timed out: the same header buys no second run', async () => {
    const header = await signedPayment();
    transcriber.fail = new EngineError('SOURCE_TIMEOUT', 'the origin dripped');
    const res = await post({ sourceUrl: SOURCE }, { 'X-PAYMENT': header });
    expect(res.status).toBe(504);
    transcriber.fail = null;
    const again = await post({ sourceUrl: SOURCE }, { 'X-PAYMENT': header });
    expect(again.status).toBe(409);
    expect((await json(again)).code).toBe('PAYMENT_REPLAYED');
    expect(transcriber.calls).toHaveLength(1);
  });

  it('hands the work a fetch budget from the advertised terms, not the fetcher’s 30 minutes', async () => {
    const res = await post({ sourceUrl: SOURCE }, { 'X-PAYMENT': await signedPayment() });
    expect(res.status).toBe(200);
    // AGENT_FETCH_TIMEOUT_SEC (60) is below maxTimeoutSeconds (300) less the settle margin.
    expect(transcriber.calls[0]?.fetchTimeoutMs).toBe(60_000);
  });

  it('lets one payer have one paid request in flight (429 with Retry-After), once verified', async () => {
    const [first, second] = [await signedPayment(), await signedPayment()];
    transcriber.delayMs = 1_000;
    const pending = post({ sourceUrl: SOURCE }, { 'X-PAYMENT': first });
    await expect.poll(() => transcriber.calls.length).toBe(1);
    const verifies = facilitator.verifyCalls;
    const busy = await post({ sourceUrl: SOURCE }, { 'X-PAYMENT': second });
    expect(busy.status).toBe(429);
    expect(busy.headers.get('retry-after')).toBe('5');
    expect((await json(busy)).code).toBe('TOO_MANY_IN_FLIGHT');
    // Verified before it counted against the payer: a forged header naming them would not.
    expect(facilitator.verifyCalls).toBe(verifies + 1);
    expect((await pending).status).toBe(200);
    // Refused at the door, the second payment's claim was released: it can be used now.
    transcriber.delayMs = 0;
    expect((await post({ sourceUrl: SOURCE }, { 'X-PAYMENT': second })).status).toBe(200);
  });

  it('gives no result when settlement fails (402)', async () => {
    const header = await signedPayment();
    facilitator.failSettle = 'insufficient_funds';
    const res = await post({ sourceUrl: SOURCE }, { 'X-PAYMENT': header });
    expect(res.status).toBe(402);
    const body = await json(res);
    expect(body).toMatchObject({ code: 'PAYMENT_SETTLEMENT_FAILED', details: { reason: 'insufficient_funds' } });
    expect(body.segments).toBeUndefined();
    expect(transcriber.calls).toHaveLength(1);
  });

  it('cancels the work when the client disconnects, and settles nothing', async () => {
    const header = await signedPayment();
    transcriber.delayMs = 10_000;
    const settles = facilitator.settleCalls;
    const ac = new AbortController();
    const pending = post({ sourceUrl: SOURCE }, { 'X-PAYMENT': header }, ac.signal).catch((e: unknown) => e);
    await expect.poll(() => transcriber.calls.length).toBe(1);
    ac.abort();
    await pending;
    await expect.poll(() => transcriber.aborted).toBe(1);
    expect(facilitator.settleCalls).toBe(settles);
  });
});

describe('POST /api/agent/transcribe without a receiving wallet', () => {
  it('answers 503 (after the body check) and says payments are disabled', async () => {
    const t = await startTestApp(testConfig());
    try {
      const terms = (await t.app.inject({ url: '/api/agent/transcribe' })).json();
      expect(terms.enabled).toBe(false);
      expect(terms.paymentsEnabled).toBe(false);
      const res = await t.app.inject({ method: 'POST', url: '/api/agent/transcribe', payload: { sourceUrl: SOURCE } });
      expect(res.statusCode).toBe(503);
      expect(res.json().code).toBe('PAYMENTS_DISABLED');
      const bad = await t.app.inject({ method: 'POST', url: '/api/agent/transcribe', payload: {} });
      expect(bad.statusCode).toBe(400);
    } finally {
      await t.close();
    }
  });
});

describe('POST /api/agent/transcribe with Redis-backed nonce claims', () => {
  it('runs a payment replayed across two app instances once', async () => {
    const { Redis } = await import('ioredis');
    const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
    const prefix = `test-agent-${Date.now()}-${Math.random().toString(36).slice(2)}:`;
    const facilitator = await new LocalFacilitator().start();
    const storage = await testStorage();
    const transcriber = new StandInTranscriber();
    transcriber.delayMs = 200;
    const config = testConfig({
      X402_PAY_TO: PAY_TO,
      X402_FACILITATOR_URL: facilitator.url,
      RATE_LIMIT_TRANSCRIBE_MAX: '1000',
    });
    // Two instances sharing one Redis, as behind a load balancer.
    const a = await startTestApp(config, { storage, transcriber, redis, redisPrefix: prefix });
    const b = await startTestApp(config, { storage, transcriber, redis, redisPrefix: prefix });
    try {
      const required = await a.app.inject({
        method: 'POST',
        url: '/api/agent/transcribe',
        payload: { sourceUrl: SOURCE },
      });
      const payload = await payer.createPaymentPayload(
        httpPayer.getPaymentRequiredResponse(() => null, required.json()),
      );
      const header = httpPayer.encodePaymentSignatureHeader(payload)['X-PAYMENT']!;
      const send = (t: TestApp) =>
        t.app.inject({
          method: 'POST',
          url: '/api/agent/transcribe',
          headers: { 'x-payment': header },
          payload: { sourceUrl: SOURCE },
        });
      const answers = await Promise.all([send(a), send(b), send(a), send(b)]);
      expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 409, 409, 409]);
      expect(transcriber.calls).toHaveLength(1);
      expect(facilitator.settlements).toHaveLength(1);
    } finally {
      await a.close();
      await b.close();
      await storage.close();
      await facilitator.close();
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
  });
});

describe('POST /api/agent/transcribe near the end of the authorization', () => {
  it('stops work that would outlive the authorization and settles nothing', async () => {
    const { signTypedData } = await import('viem/accounts');
    const facilitator = await new LocalFacilitator().start();
    const transcriber = new StandInTranscriber();
    transcriber.delayMs = 20_000;
    const t = await startTestApp(testConfig({ X402_PAY_TO: PAY_TO, X402_FACILITATOR_URL: facilitator.url }), {
      transcriber,
      x402SettleMarginSec: 2,
    });
    try {
      const key = generatePrivateKey();
      const from = privateKeyToAccount(key).address;
      const now = Math.floor(Date.now() / 1000);
      // Signed by hand (the client library always grants maxTimeoutSeconds): valid 5 s more.
      const authorization = {
        from,
        to: PAY_TO,
        value: '50000',
        validAfter: String(now - 60),
        validBefore: String(now + 5),
        nonce: `0x${'ab'.repeat(32)}`,
      } as const;
      const signature = await signTypedData({
        privateKey: key,
        domain: {
          name: 'USDC',
          version: '2',
          chainId: 84532,
          verifyingContract: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
        },
        types: {
          TransferWithAuthorization: [
            { name: 'from', type: 'address' },
            { name: 'to', type: 'address' },
            { name: 'value', type: 'uint256' },
            { name: 'validAfter', type: 'uint256' },
            { name: 'validBefore', type: 'uint256' },
            { name: 'nonce', type: 'bytes32' },
          ],
        },
        primaryType: 'TransferWithAuthorization',
        message: {
          ...authorization,
          value: 50000n,
          validAfter: BigInt(authorization.validAfter),
          validBefore: BigInt(authorization.validBefore),
        },
      });
      const header = Buffer.from(
        JSON.stringify({
          x402Version: 1,
          scheme: 'exact',
          network: 'base-sepolia',
          payload: { signature, authorization },
        }),
      ).toString('base64');
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/agent/transcribe',
        headers: { 'x-payment': header },
        payload: { sourceUrl: SOURCE },
      });
      expect(res.statusCode).toBe(402);
      expect(res.json().code).toBe('PAYMENT_SETTLEMENT_FAILED');
      expect(transcriber.aborted).toBe(1);
      expect(facilitator.verifyCalls).toBe(1);
      expect(facilitator.settleCalls).toBe(0);
    } finally {
      await t.close();
      await facilitator.close();
    }
  });
});

describe('POST /api/agent/transcribe admission and facilitator clocks', () => {
  const lines: string[] = [];
  const logger = { level: 'info', stream: { write: (line: string) => void lines.push(line) } };
  const other = new x402Client().registerV1(
    'base-sepolia',
    new ExactEvmSchemeV1(toClientEvmSigner(privateKeyToAccount(generatePrivateKey()))),
  );

  async function app(
    env: Record<string, string>,
    transcriber: StandInTranscriber,
    facilitator: LocalFacilitator,
    facilitatorTimeoutMs = 200,
  ) {
    return startTestApp(
      testConfig({
        X402_PAY_TO: PAY_TO,
        X402_FACILITATOR_URL: facilitator.url,
        RATE_LIMIT_TRANSCRIBE_MAX: '1000',
        ...env,
      }),
      { transcriber, facilitatorTimeoutMs, logger },
    );
  }
  async function pay(t: TestApp, client: x402Client): Promise<string> {
    const required = await t.app.inject({
      method: 'POST',
      url: '/api/agent/transcribe',
      payload: { sourceUrl: SOURCE },
    });
    const payload = await client.createPaymentPayload(
      httpPayer.getPaymentRequiredResponse(() => null, required.json()),
    );
    return httpPayer.encodePaymentSignatureHeader(payload)['X-PAYMENT']!;
  }
  const send = (t: TestApp, header: string, remoteAddress = '203.0.113.1') =>
    t.app.inject({
      method: 'POST',
      url: '/api/agent/transcribe',
      remoteAddress,
      headers: { 'x-payment': header },
      payload: { sourceUrl: SOURCE },
    });

  it('answers 503 with Retry-After at once when the queue is full, and 429 to a second request from one network', async () => {
    const facilitator = await new LocalFacilitator().start();
    const transcriber = new StandInTranscriber();
    transcriber.delayMs = 1_000;
    // Every payment here is genuine: a facilitator slowed by a busy machine must not refuse one.
    const t = await app({ TRANSCRIBE_MAX_PENDING: '1' }, transcriber, facilitator, 30_000);
    try {
      const [a, b] = [await pay(t, payer), await pay(t, other)];
      const pending = send(t, a, '203.0.113.1');
      await expect.poll(() => transcriber.calls.length).toBe(1);
      const sameNetwork = await send(t, b, '203.0.113.1');
      expect(sameNetwork.statusCode).toBe(429);
      expect(sameNetwork.json().code).toBe('TOO_MANY_IN_FLIGHT');
      const full = await send(t, b, '198.51.100.9');
      expect(full.statusCode).toBe(503);
      expect(full.headers['retry-after']).toBe('5');
      expect(full.json().code).toBe('SERVICE_BUSY');
      // Each was verified before it was weighed against the work pool.
      expect(facilitator.verifyCalls).toBe(3);
      expect((await pending).statusCode).toBe(200);
      transcriber.delayMs = 0;
      expect((await send(t, b, '198.51.100.9')).statusCode).toBe(200);
    } finally {
      await t.close();
      await facilitator.close();
    }
  });

  it('keeps forged payments waiting on a slow facilitator out of the work pool and off their victim', async () => {
    const facilitator = await new LocalFacilitator().start();
    facilitator.slowRefusalMs = 1_500;
    const transcriber = new StandInTranscriber();
    const t = await startTestApp(
      testConfig({
        X402_PAY_TO: PAY_TO,
        X402_FACILITATOR_URL: facilitator.url,
        RATE_LIMIT_TRANSCRIBE_MAX: '1000',
        TRANSCRIBE_MAX_PENDING: '4',
        X402_VERIFY_PER_NETWORK: '1',
      }),
      { transcriber, facilitatorTimeoutMs: 5_000 },
    );
    try {
      // Four forged payments naming the victim's wallet in `from` (signatures that do not match),
      // from four networks, all held by the facilitator.
      const forged: string[] = [];
      for (let i = 0; i < 4; i++) {
        const p = JSON.parse(Buffer.from(await pay(t, payer), 'base64').toString());
        p.payload.authorization.validBefore = String(Number(p.payload.authorization.validBefore) - 1);
        forged.push(Buffer.from(JSON.stringify(p)).toString('base64'));
      }
      const held = forged.map((h, i) => send(t, h, `192.0.2.${i + 1}`));
      await expect.poll(() => facilitator.verifyCalls).toBe(4);
      // A fifth from a network already verifying one waits its turn at the door: 429.
      const extra = JSON.parse(Buffer.from(await pay(t, other), 'base64').toString());
      extra.payload.authorization.validBefore = String(Number(extra.payload.authorization.validBefore) - 1);
      const bounced = await send(t, Buffer.from(JSON.stringify(extra)).toString('base64'), '192.0.2.1');
      expect(bounced.statusCode).toBe(429);
      // The victim's own payment is admitted at once and done.
      const honest = await send(t, await pay(t, payer), '198.51.100.20');
      expect(honest.statusCode, honest.body).toBe(200);
      for (const res of await Promise.all(held)) {
        expect(res.statusCode).toBe(402);
        expect(res.json().code).toBe('PAYMENT_INVALID');
      }
      expect(transcriber.calls).toHaveLength(1);
    } finally {
      await t.close();
      await facilitator.close();
    }
  });

  it('bounds and logs a facilitator that never answers verify (502)', async () => {
    const facilitator = await new LocalFacilitator().start();
    const transcriber = new StandInTranscriber();
    const t = await app({}, transcriber, facilitator);
    try {
      const header = await pay(t, payer);
      facilitator.hang = 'verify';
      lines.length = 0;
      const res = await send(t, header);
      expect(res.statusCode).toBe(502);
      expect(res.json().code).toBe('FACILITATOR_UNAVAILABLE');
      expect(transcriber.calls).toHaveLength(0);
      expect(lines.some((l) => l.includes('x402 verify failed'))).toBe(true);
    } finally {
      await t.close();
      await facilitator.close();
    }
  });

  it('logs a refused verify', async () => {
    const facilitator = await new LocalFacilitator().start();
    const t = await app({}, new StandInTranscriber(), facilitator);
    try {
      const p = JSON.parse(Buffer.from(await pay(t, payer), 'base64').toString());
      p.payload.authorization.validBefore = String(Number(p.payload.authorization.validBefore) - 1);
      lines.length = 0;
      const res = await send(t, Buffer.from(JSON.stringify(p)).toString('base64'));
      expect(res.statusCode).toBe(402);
      const logged = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'x402 verify refused');
      expect(logged).toMatchObject({ reason: 'invalid_exact_evm_payload_signature', paymentId: expect.any(String) });
    } finally {
      await t.close();
      await facilitator.close();
    }
  });

  it('bounds and logs a facilitator that never answers settle (402), and keeps the claim', async () => {
    const facilitator = await new LocalFacilitator().start();
    const transcriber = new StandInTranscriber();
    const t = await app({}, transcriber, facilitator);
    try {
      const header = await pay(t, payer);
      facilitator.hang = 'settle';
      lines.length = 0;
      const res = await send(t, header);
      expect(res.statusCode).toBe(402);
      expect(res.json().code).toBe('PAYMENT_SETTLEMENT_FAILED');
      expect(lines.some((l) => l.includes('x402 settle failed'))).toBe(true);
      // It may have settled after all: the same header is not run again.
      facilitator.hang = null;
      expect((await send(t, header)).statusCode).toBe(409);
    } finally {
      await t.close();
      await facilitator.close();
    }
  });
});
