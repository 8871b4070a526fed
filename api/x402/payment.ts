/**
 * x402 protocol v1, the resource-server side: the requirements we advertise, decoding the
 * `X-PAYMENT` header and checking it against those requirements before the facilitator
 * sees it. The requirements are always built here from our config and our own URL, never
 * taken from the client, so a payment made for another resource or payee cannot pass.
 */

import { decodePaymentSignatureHeader } from '@x402/core/http';
import type { Config } from '../config.ts';
import { AGENT_PRICE } from '../config.ts';
import { ApiError } from '../errors.ts';

export interface PaymentRequirementsV1 {
  scheme: 'exact';
  network: string;
  maxAmountRequired: string;
  asset: string;
  payTo: string;
  resource: string;
  description: string;
  mimeType: string;
  maxTimeoutSeconds: number;
  outputSchema?: Record<string, unknown>;
  extra: { name: string; version: string };
}

export interface ExactAuthorization {
  from: string;
  to: string;
  value: string;
  validAfter: string;
  validBefore: string;
  nonce: string;
}

export interface PaymentPayloadV1 {
  x402Version: 1;
  scheme: 'exact';
  network: string;
  payload: { signature: string; authorization: ExactAuthorization };
}

export function agentRequirements(x: Config['x402'], payTo: string, resource: string): PaymentRequirementsV1 {
  return {
    scheme: 'exact',
    network: x.network,
    maxAmountRequired: AGENT_PRICE.baseUnits,
    asset: x.asset,
    payTo,
    resource,
    description: 'Transcribe one public https media URL (segments with word timestamps).',
    mimeType: 'application/json',
    maxTimeoutSeconds: x.maxTimeoutSeconds,
    extra: { name: x.assetName, version: x.assetVersion },
  };
}

/** The 402 answer: x402's `{x402Version, error, accepts}` inside the API's error shape. */
export function paymentRequired(
  requirements: PaymentRequirementsV1,
  code: 'PAYMENT_REQUIRED' | 'PAYMENT_INVALID' | 'PAYMENT_SETTLEMENT_FAILED',
  message: string,
  details?: Record<string, unknown>,
): ApiError {
  return new ApiError(402, code, message, {
    extra: { x402Version: 1, error: message, accepts: [requirements] },
    ...(details ? { details } : {}),
  });
}

const HEX = (n: number) => new RegExp(`^0x[0-9a-fA-F]{${n}}$`);
const ADDRESS = HEX(40);
const NONCE = HEX(64);
const UINT = /^\d{1,78}$/;

/** Client clocks run a little ahead of ours; a `validBefore` this far past our horizon still passes. */
export const VALID_BEFORE_SKEW_SEC = 60;

/**
 * Decodes and checks the header against `req`. `minRemainingSec`: the authorization must
 * stay valid at least this long, or we could not settle it after doing the work. It may not
 * stay valid much longer than `req.maxTimeoutSeconds` either: its nonce claim is held until
 * `validBefore`, and a far-off one held it for weeks (and overflowed Node's timers).
 */
export function checkPayment(
  header: string,
  req: PaymentRequirementsV1,
  nowSec: number,
  minRemainingSec: number,
): PaymentPayloadV1 {
  const invalid = (reason: string) =>
    paymentRequired(req, 'PAYMENT_INVALID', `Invalid payment: ${reason}.`, { reason });
  let decoded: unknown;
  try {
    decoded = decodePaymentSignatureHeader(header);
  } catch {
    throw invalid('X-PAYMENT is not base64-encoded JSON');
  }
  const p = decoded as Partial<PaymentPayloadV1> | null;
  if (!p || typeof p !== 'object') throw invalid('malformed payload');
  if (p.x402Version !== 1) throw invalid('unsupported x402Version');
  if (p.scheme !== req.scheme) throw invalid('unsupported scheme');
  if (p.network !== req.network) throw invalid('wrong network');
  const a = p.payload?.authorization;
  const sig = p.payload?.signature;
  if (!a || typeof sig !== 'string' || !/^0x[0-9a-fA-F]+$/.test(sig)) throw invalid('missing signature');
  if (![a.from, a.to].every((v) => typeof v === 'string' && ADDRESS.test(v))) throw invalid('bad addresses');
  if (typeof a.nonce !== 'string' || !NONCE.test(a.nonce)) throw invalid('bad nonce');
  if (![a.value, a.validAfter, a.validBefore].every((v) => typeof v === 'string' && UINT.test(v))) {
    throw invalid('bad amounts or times');
  }
  if (a.to.toLowerCase() !== req.payTo.toLowerCase()) throw invalid('wrong payee');
  if (BigInt(a.value) !== BigInt(req.maxAmountRequired)) throw invalid('wrong amount');
  if (BigInt(a.validAfter) > BigInt(nowSec)) throw invalid('authorization not yet valid');
  if (BigInt(a.validBefore) < BigInt(nowSec + minRemainingSec)) throw invalid('authorization expires too soon');
  if (BigInt(a.validBefore) > BigInt(nowSec + req.maxTimeoutSeconds + VALID_BEFORE_SKEW_SEC)) {
    throw invalid(`authorization valid for longer than maxTimeoutSeconds (${req.maxTimeoutSeconds} s)`);
  }
  return p as PaymentPayloadV1;
}

/** One authorization = one (network, payer, nonce): EIP-3009 nonces are per payer. */
export function paymentId(p: PaymentPayloadV1): string {
  const a = p.payload.authorization;
  return `${p.network}:${a.from.toLowerCase()}:${a.nonce.toLowerCase()}`;
}
