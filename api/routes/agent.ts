/**
 * The paid endpoint for agents without an account: GET tells the price and terms; POST
 * runs one transcription paid over x402 v1: body check → the payment admitted (x402/paid-call.ts:
 * wallet configured, payment header, local checks, nonce claim, facilitator verify, work slot) →
 * work → settle (only after success, before the authorization expires) → result with
 * X-PAYMENT-RESPONSE.
 */

import type { FastifyInstance } from 'fastify';
import { isEngineError } from '../../engine/errors.ts';
import { clientNetwork } from '../ratelimit.ts';
import { errorResponses, TRANSCRIPTION_ERRORS } from '../schemas.ts';
import { checkPublicHttpsUrl } from '../source-url.ts';
import { AGENT_TRANSCRIBE_PATH, paymentTerms, paymentTermsSchema } from '../surface/facts.ts';
import {
  checkedPrompt,
  type TranscribeBody,
  transcribeBody,
  transcribeForClient,
  transcriptSchema,
} from '../transcribe-request.ts';
import type { TranscribeRequest, Transcriber } from '../transcriber.ts';
import { type PaidCallOptions, PaidCalls } from '../x402/paid-call.ts';
import { paymentRequired } from '../x402/payment.ts';

export { SETTLE_MARGIN_SEC } from '../x402/paid-call.ts';

const PATH = AGENT_TRANSCRIBE_PATH;

export interface AgentOptions extends Omit<PaidCallOptions, 'resource'> {
  transcriber: Transcriber;
}

export async function agentRoutes(app: FastifyInstance, opts: AgentOptions): Promise<void> {
  const { config } = opts;
  const paid = new PaidCalls({ ...opts, resource: `${config.publicUrl}${PATH}` });

  app.get(PATH, { schema: termsSchema }, async () => paymentTerms(config));

  app.post(
    PATH,
    { config: { rateLimitMax: config.rateLimit.transcribeMax, rateLimitPolicy: 'agent' }, schema: transcribeSchema },
    async (request, reply) => {
      const body = request.body as TranscribeBody;
      checkPublicHttpsUrl(body.sourceUrl, { allowedPorts: config.sourcePorts });
      const prompt = checkedPrompt(body);
      const requirements = paid.requirements();
      const network = clientNetwork(request.ip);
      const call = await paid.admit(requirements, request.headers['x-payment'], network, request.log);
      try {
        const req: TranscribeRequest = {
          sourceUrl: body.sourceUrl,
          policy: { mode: 'public' },
          wordTimestamps: body.word_timestamps,
          maxBytes: config.maxSourceBytes,
          fetchTimeoutMs: Math.min(call.workMs, config.agentFetchTimeoutSec * 1000),
        };
        if (body.language !== undefined) req.language = body.language;
        if (prompt !== undefined) req.initialPrompt = prompt;
        const deadline = AbortSignal.timeout(call.workMs);
        let transcript: Awaited<ReturnType<typeof transcribeForClient>>;
        try {
          transcript = await transcribeForClient(opts.transcriber, request, reply, req, deadline);
        } catch (err) {
          // A payment whose work was stopped by our clocks or refused by our source rules may
          // not come back for another free run: its claim stays until validBefore.
          call.keepClaim = deadline.aborted || (isEngineError(err) && ABUSE_CODES.has(err.code));
          if (deadline.aborted && !reply.raw.destroyed) {
            throw paymentRequired(
              requirements,
              'PAYMENT_SETTLEMENT_FAILED',
              'The authorization would expire before the work ends.',
            );
          }
          throw err;
        }
        reply.header('X-PAYMENT-RESPONSE', await paid.settle(call, request.log));
        reply.header('Access-Control-Expose-Headers', 'X-PAYMENT-RESPONSE');
        return transcript;
      } finally {
        await paid.finish(call);
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

const termsSchema = {
  operationId: 'getAgentTranscribeTerms',
  tags: ['agent'],
  summary: 'Price and payment terms of the paid transcription endpoint.',
  response: { 200: paymentTermsSchema },
};

const transcribeSchema = {
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
};
