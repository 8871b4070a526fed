/**
 * The paid endpoint for agents without an account: GET tells the price and terms; POST
 * runs one transcription paid over x402 v1. Order matters and is the point of this file:
 * body check → wallet configured → payment header → local checks → nonce claim →
 * facilitator verify → work → settle (only after success, before the authorization
 * expires) → result with X-PAYMENT-RESPONSE.
 */

import { encodePaymentResponseHeader, type HTTPFacilitatorClient } from '@x402/core/http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isEngineError } from '../../engine/errors.ts';
import type { Admission } from '../admission.ts';
import type { Config } from '../config.ts';
import { ApiError } from '../errors.ts';
import { clientNetwork } from '../ratelimit.ts';
import { errorResponses, TRANSCRIPTION_ERRORS } from '../schemas.ts';
import { checkPublicHttpsUrl } from '../source-url.ts';
import type { Storage } from '../storage/types.ts';
import { AGENT_TRANSCRIBE_PATH, paymentTerms, paymentTermsSchema } from '../surface/facts.ts';
import {
  checkedPrompt,
  type TranscribeBody,
  transcribeBody,
  transcribeForClient,
  transcriptSchema,
} from '../transcribe-request.ts';
import type { TranscribeRequest, Transcriber } from '../transcriber.ts';
import type { NonceLock } from '../x402/nonce-lock.ts';
import {
  agentRequirements,
  checkPayment,
  type PaymentPayloadV1,
  type PaymentRequirementsV1,
  paymentId,
  paymentRequired,
} from '../x402/payment.ts';

/** Time an authorization must have left when it arrives; half of it is kept for settling. */
export const SETTLE_MARGIN_SEC = 30;
const PATH = AGENT_TRANSCRIBE_PATH;

export interface AgentOptions {
  config: Readonly<Config>;
  transcriber: Transcriber;
  facilitator: Pick<HTTPFacilitatorClient, 'verify' | 'settle'>;
  nonceLock: NonceLock;
  storage: Storage;
  /** Default SETTLE_MARGIN_SEC; tests shorten it to reach the deadline quickly. */
  settleMarginSec?: number;
  /** Our bound on each facilitator call (verify, settle). */
  facilitatorTimeoutMs: number;
  admission: Admission;
  /**
   * Facilitator verifications in flight, per client network and in total: outside the work
   * pool, so unverified (forged) payments never hold a work slot or count against a payer.
   */
  verifications: { admission: Admission; perNetworkMax: number };
  /** Told of each facilitator outcome (the service's metrics). */
  onPayment?: (outcome: 'verified' | 'settled' | 'refused') => void;
}

export async function agentRoutes(app: FastifyInstance, opts: AgentOptions): Promise<void> {
  const { config, facilitator, nonceLock, storage } = opts;
  const margin = opts.settleMarginSec ?? SETTLE_MARGIN_SEC;
  const x = config.x402;
  const resource = `${config.publicUrl}${PATH}`;

  app.get(
    PATH,
    {
      schema: {
        operationId: 'getAgentTranscribeTerms',
        tags: ['agent'],
        summary: 'Price and payment terms of the paid transcription endpoint.',
        response: { 200: paymentTermsSchema },
      },
    },
    async () => paymentTerms(config),
  );

  app.post(
    PATH,
    {
      config: { rateLimitMax: config.rateLimit.transcribeMax, rateLimitPolicy: 'agent' },
      schema: {
        operationId: 'agentTranscribe',
        tags: ['agent'],
        summary: 'Transcribe a public https media URL, paid per call over x402 v1 (no account).',
        headers: {
          type: 'object',
          properties: { 'x-payment': { type: 'string', description: 'x402 v1 payment payload, base64 JSON' } },
        },
        body: transcribeBody,
        response: {
          200: {
            ...transcriptSchema,
            description: 'The transcript; X-PAYMENT-RESPONSE carries the settlement (base64 JSON).',
          },
          ...errorResponses(...TRANSCRIPTION_ERRORS, 402, 409),
        },
      },
    },
    async (request, reply) => {
      const body = request.body as TranscribeBody;
      checkPublicHttpsUrl(body.sourceUrl, { allowedPorts: config.sourcePorts });
      const prompt = checkedPrompt(body);
      if (x.payTo === undefined) {
        throw new ApiError(503, 'PAYMENTS_DISABLED', 'Payments are not enabled on this server.');
      }
      const requirements = agentRequirements(x, x.payTo, resource);
      const header = request.headers['x-payment'];
      if (typeof header !== 'string' || header === '') {
        throw paymentRequired(requirements, 'PAYMENT_REQUIRED', 'X-PAYMENT header is required');
      }
      const nowSec = Math.floor(Date.now() / 1000);
      // Also refuses a validBefore past maxTimeoutSeconds, before the facilitator hears of it.
      const payment = checkPayment(header, requirements, nowSec, margin);
      const id = paymentId(payment);
      const validBefore = Number(payment.payload.authorization.validBefore);
      // Held until the authorization expires: after that the chain refuses it anyway.
      const claim = await nonceLock.acquire(id, (validBefore - nowSec + 60) * 1000);
      if (!claim) throw new ApiError(409, 'PAYMENT_REPLAYED', 'This payment has already been used or is in use.');
      // Verified first, in a pool of its own bounded per network (429) and in total (503): a
      // forged payment waiting on a slow facilitator holds no work slot, and the `from` it
      // names counts against nobody until the facilitator has vouched for it.
      let leave: () => void;
      try {
        const leaveVerify = opts.verifications.admission.enter([
          { key: `verify-ip:${clientNetwork(request.ip)}`, max: opts.verifications.perNetworkMax },
        ]);
        try {
          await verifyOrThrow(facilitator, payment, requirements, opts.facilitatorTimeoutMs, request);
        } catch (err) {
          if (err instanceof ApiError && err.code === 'PAYMENT_INVALID') opts.onPayment?.('refused');
          throw err;
        } finally {
          leaveVerify();
        }
        opts.onPayment?.('verified');
        // Then the work pool: a payer or a network already in flight, or a full queue, gets an
        // immediate answer instead of a place behind work that may never pay.
        leave = opts.admission.enter([
          { key: `payer:${payment.payload.authorization.from.toLowerCase()}`, max: config.admission.perCallerMax },
          { key: `ip:${clientNetwork(request.ip)}`, max: config.admission.perCallerMax },
        ]);
      } catch (err) {
        await claim.release().catch(() => {});
        throw err;
      }

      let settled = false;
      let keepClaim = false;
      try {
        // The work gets what the advertised terms promise, less the time kept for settling,
        // whatever the origin's pace or the fetcher's own (much longer) clocks.
        const workMs = Math.max(1, (Math.min(validBefore - nowSec, x.maxTimeoutSeconds) - margin / 2) * 1000);
        const req: TranscribeRequest = {
          sourceUrl: body.sourceUrl,
          policy: { mode: 'public' },
          wordTimestamps: body.word_timestamps,
          maxBytes: config.maxSourceBytes,
          fetchTimeoutMs: Math.min(workMs, config.agentFetchTimeoutSec * 1000),
        };
        if (body.language !== undefined) req.language = body.language;
        if (prompt !== undefined) req.initialPrompt = prompt;
        const deadline = AbortSignal.timeout(workMs);
        let transcript: Awaited<ReturnType<typeof transcribeForClient>>;
        try {
          transcript = await transcribeForClient(opts.transcriber, request, reply, req, deadline);
        } catch (err) {
          // A payment whose work was stopped by our clocks or refused by our source rules may
          // not come back for another free run: its claim stays until validBefore.
          keepClaim = deadline.aborted || (isEngineError(err) && ABUSE_CODES.has(err.code));
          if (deadline.aborted && !reply.raw.destroyed) {
            throw paymentRequired(
              requirements,
              'PAYMENT_SETTLEMENT_FAILED',
              'The authorization would expire before the work ends.',
            );
          }
          throw err;
        }
        let settle: Awaited<ReturnType<typeof facilitator.settle>>;
        try {
          // v1 shapes; the client posts them to /settle as given. Bounded by our own clock
          // as well: a settlement after validBefore cannot succeed.
          const settleMs = Math.min(opts.facilitatorTimeoutMs, Math.max(0, validBefore * 1000 - Date.now()));
          settle = await withTimeout(facilitator.settle(payment as never, requirements as never), settleMs, 'settle');
        } catch (err) {
          // Unknown outcome (timeout, network): it may have settled, so the nonce stays claimed.
          // A SettleError is the facilitator's definite `success: false`.
          keepClaim = (err as Error | null)?.name !== 'SettleError';
          request.log.error({ err, paymentId: id }, 'x402 settle failed');
          throw paymentRequired(requirements, 'PAYMENT_SETTLEMENT_FAILED', 'Settlement failed; no result is given.');
        }
        if (!settle.success) {
          opts.onPayment?.('refused');
          request.log.warn({ paymentId: id, reason: settle.errorReason }, 'x402 settle refused');
          throw paymentRequired(requirements, 'PAYMENT_SETTLEMENT_FAILED', 'Settlement failed; no result is given.', {
            reason: settle.errorReason ?? 'unknown',
          });
        }
        settled = true;
        opts.onPayment?.('settled');
        const payer = settle.payer ?? payment.payload.authorization.from;
        await storage
          .recordPayment({
            id,
            payer,
            amount: requirements.maxAmountRequired,
            network: x.network,
            asset: requirements.asset,
            payTo: requirements.payTo,
            resource,
            transaction: settle.transaction,
          })
          .catch((err: unknown) => request.log.error({ err, id }, 'settled payment not recorded'));
        reply.header(
          'X-PAYMENT-RESPONSE',
          encodePaymentResponseHeader({
            success: true,
            transaction: settle.transaction,
            network: x.network,
            payer,
          } as never),
        );
        reply.header('Access-Control-Expose-Headers', 'X-PAYMENT-RESPONSE');
        return transcript;
      } finally {
        leave();
        if (!settled && !keepClaim) await claim.release().catch(() => {});
      }
    },
  );
}

/**
 * Failures of the work that a stranger causes on purpose to tie the worker up (a source that
 * drips, redirects in loops, points inside, or is too large). The payment that carried them
 * keeps its claim, so the same header cannot buy another free attempt.
 */
const ABUSE_CODES: ReadonlySet<string> = new Set([
  'SOURCE_TIMEOUT',
  'SOURCE_ADDRESS_BLOCKED',
  'SOURCE_TOO_LARGE',
  'SOURCE_TOO_MANY_REDIRECTS',
  'MEDIA_DURATION_EXCEEDED',
  'DECODE_TIMEOUT',
]);

class FacilitatorTimeout extends Error {
  override readonly name = 'FacilitatorTimeout';
}

/** Our own bound on a facilitator call, whatever the client library's clock says. */
function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new FacilitatorTimeout(`facilitator ${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

async function verifyOrThrow(
  facilitator: AgentOptions['facilitator'],
  payment: PaymentPayloadV1,
  requirements: PaymentRequirementsV1,
  timeoutMs: number,
  request: FastifyRequest,
): Promise<void> {
  const paymentId_ = paymentId(payment);
  let result: Awaited<ReturnType<AgentOptions['facilitator']['verify']>>;
  try {
    result = await withTimeout(facilitator.verify(payment as never, requirements as never), timeoutMs, 'verify');
  } catch (err) {
    // The client library throws VerifyError for a facilitator's non-2xx `{isValid: false}`.
    const data = (err as { invalidReason?: unknown; response?: { isValid?: unknown; invalidReason?: unknown } }) ?? {};
    const reason = data.invalidReason ?? data.response?.invalidReason;
    if (typeof reason === 'string') {
      request.log.warn({ paymentId: paymentId_, reason }, 'x402 verify refused');
      throw paymentRequired(requirements, 'PAYMENT_INVALID', `Payment rejected: ${reason}.`, { reason });
    }
    request.log.error({ err, paymentId: paymentId_ }, 'x402 verify failed');
    throw new ApiError(502, 'FACILITATOR_UNAVAILABLE', 'The payment facilitator could not be reached.', { cause: err });
  }
  if (!result.isValid) {
    const reason = result.invalidReason ?? 'invalid';
    request.log.warn({ paymentId: paymentId_, reason }, 'x402 verify refused');
    throw paymentRequired(requirements, 'PAYMENT_INVALID', `Payment rejected: ${reason}.`, { reason });
  }
}
