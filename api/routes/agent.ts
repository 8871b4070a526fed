/**
 * The paid endpoint for agents without an account: GET tells the price and terms; POST
 * runs one transcription paid over x402 v1. Order matters and is the point of this file:
 * body check → wallet configured → payment header → local checks → nonce claim →
 * facilitator verify → work → settle (only after success, before the authorization
 * expires) → result with X-PAYMENT-RESPONSE.
 */

import { encodePaymentResponseHeader, type HTTPFacilitatorClient } from '@x402/core/http';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import { ApiError } from '../errors.ts';
import { checkPublicHttpsUrl } from '../source-url.ts';
import type { Storage } from '../storage/types.ts';
import { AGENT_TRANSCRIBE_PATH, paymentTerms, paymentTermsSchema } from '../surface/facts.ts';
import type { TranscribeRequest, Transcriber } from '../transcriber.ts';
import type { NonceLock } from '../x402/nonce-lock.ts';
import {
  agentRequirements,
  checkPayment,
  type PaymentRequirementsV1,
  paymentId,
  paymentRequired,
} from '../x402/payment.ts';
import { errorRef, type TranscribeBody, transcribeBody, transcribeForClient, transcriptSchema } from './transcribe.ts';

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
      config: { rateLimit: { max: config.rateLimit.transcribeMax }, rateLimitPolicy: 'agent' },
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
          400: errorRef,
          402: errorRef,
          409: errorRef,
          413: errorRef,
          422: errorRef,
          429: errorRef,
          502: errorRef,
          503: errorRef,
          504: errorRef,
        },
      },
    },
    async (request, reply) => {
      const body = request.body as TranscribeBody;
      checkPublicHttpsUrl(body.sourceUrl);
      if (x.payTo === undefined) {
        throw new ApiError(503, 'PAYMENTS_DISABLED', 'Payments are not enabled on this server.');
      }
      const requirements = agentRequirements(x, x.payTo, resource);
      const header = request.headers['x-payment'];
      if (typeof header !== 'string' || header === '') {
        throw paymentRequired(requirements, 'PAYMENT_REQUIRED', 'X-PAYMENT header is required');
      }
      const nowSec = Math.floor(Date.now() / 1000);
      const payment = checkPayment(header, requirements, nowSec, margin);
      const id = paymentId(payment);
      const validBefore = Number(payment.payload.authorization.validBefore);
      // Held until the authorization expires: after that the chain refuses it anyway.
      const claim = await nonceLock.acquire(id, (validBefore - nowSec + 60) * 1000);
      if (!claim) throw new ApiError(409, 'PAYMENT_REPLAYED', 'This payment has already been used or is in use.');

      let settled = false;
      let keepClaim = false;
      try {
        await verifyOrThrow(facilitator, payment, requirements);
        const req: TranscribeRequest = {
          sourceUrl: body.sourceUrl,
          policy: { mode: 'public' },
          wordTimestamps: body.word_timestamps,
          maxBytes: config.maxSourceBytes,
        };
        if (body.language !== undefined) req.language = body.language;
        // Work that would outlive the authorization could never be paid for: stop it in time.
        const deadline = AbortSignal.timeout(Math.max(0, validBefore - margin / 2 - nowSec) * 1000);
        let transcript: Awaited<ReturnType<typeof transcribeForClient>>;
        try {
          transcript = await transcribeForClient(opts.transcriber, request, reply, req, deadline);
        } catch (err) {
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
          // v1 shapes; the client posts them to /settle as given.
          settle = await facilitator.settle(payment as never, requirements as never);
        } catch (err) {
          // Unknown outcome (timeout, network): it may have settled, so the nonce stays claimed.
          // A SettleError is the facilitator's definite `success: false`.
          keepClaim = (err as Error | null)?.name !== 'SettleError';
          request.log.error({ err }, 'x402 settle failed');
          throw paymentRequired(requirements, 'PAYMENT_SETTLEMENT_FAILED', 'Settlement failed; no result is given.');
        }
        if (!settle.success) {
          throw paymentRequired(requirements, 'PAYMENT_SETTLEMENT_FAILED', 'Settlement failed; no result is given.', {
            reason: settle.errorReason ?? 'unknown',
          });
        }
        settled = true;
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
        if (!settled && !keepClaim) await claim.release().catch(() => {});
      }
    },
  );
}

async function verifyOrThrow(
  facilitator: AgentOptions['facilitator'],
  payment: unknown,
  requirements: PaymentRequirementsV1,
): Promise<void> {
  let result: Awaited<ReturnType<AgentOptions['facilitator']['verify']>>;
  try {
    result = await facilitator.verify(payment as never, requirements as never);
  } catch (err) {
    // The client library throws VerifyError for a facilitator's non-2xx `{isValid: false}`.
    const data = (err as { invalidReason?: unknown; response?: { isValid?: unknown; invalidReason?: unknown } }) ?? {};
    const reason = data.invalidReason ?? data.response?.invalidReason;
    if (typeof reason === 'string') {
      throw paymentRequired(requirements, 'PAYMENT_INVALID', `Payment rejected: ${reason}.`, { reason });
    }
    throw new ApiError(502, 'FACILITATOR_UNAVAILABLE', 'The payment facilitator could not be reached.', { cause: err });
  }
  if (!result.isValid) {
    const reason = result.invalidReason ?? 'invalid';
    throw paymentRequired(requirements, 'PAYMENT_INVALID', `Payment rejected: ${reason}.`, { reason });
  }
}
