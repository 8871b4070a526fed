/**
 * One paid call's payment, apart from HTTP. Order matters and is the point of this file: wallet
 * configured → payment header → local checks → nonce claim → facilitator verify (in a pool of its
 * own) → work pool admission; then, once the work has succeeded, settle (before the authorization
 * expires) and record it. routes/agent.ts runs the work between `admit` and `settle` and ends
 * every call with `finish`.
 */

import { encodePaymentResponseHeader, type HTTPFacilitatorClient } from '@x402/core/http';
import type { Admission } from '../admission.ts';
import type { Config } from '../config.ts';
import { ApiError } from '../errors.ts';
import type { Storage } from '../storage/types.ts';
import type { Claim, NonceLock } from './nonce-lock.ts';
import {
  agentRequirements,
  checkPayment,
  type PaymentPayloadV1,
  type PaymentRequirementsV1,
  paymentId,
  paymentRequired,
} from './payment.ts';

/** Time an authorization must have left when it arrives; half of it is kept for settling. */
export const SETTLE_MARGIN_SEC = 30;

type Facilitator = Pick<HTTPFacilitatorClient, 'verify' | 'settle'>;

export interface PaidCallOptions {
  config: Readonly<Config>;
  facilitator: Facilitator;
  nonceLock: NonceLock;
  storage: Storage;
  /** The URL payments are for (the requirements' `resource`). */
  resource: string;
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

export interface PaymentLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** An admitted call: its verified payment, its nonce claim and its work slot, until `finish`. */
export interface PaidCall {
  readonly requirements: PaymentRequirementsV1;
  readonly payment: PaymentPayloadV1;
  readonly id: string;
  /** What the work may take: the advertised terms less the time kept for settling. */
  readonly workMs: number;
  /** Set when the nonce must stay claimed (the work was abuse, or a settlement's outcome is unknown). */
  keepClaim: boolean;
  settled: boolean;
  readonly claim: Claim;
  readonly leave: () => void;
  readonly validBefore: number;
}

export class PaidCalls {
  readonly #o: PaidCallOptions;
  readonly #margin: number;

  constructor(o: PaidCallOptions) {
    this.#o = o;
    this.#margin = o.settleMarginSec ?? SETTLE_MARGIN_SEC;
  }

  /** The requirements a payment must meet (503 while no wallet is configured). */
  requirements(): PaymentRequirementsV1 {
    const x = this.#o.config.x402;
    if (x.payTo === undefined) {
      throw new ApiError(503, 'PAYMENTS_DISABLED', 'Payments are not enabled on this server.');
    }
    return agentRequirements(x, x.payTo, this.#o.resource);
  }

  /** Checks, claims and verifies the `X-PAYMENT` header, then takes a work slot for the call. */
  async admit(
    requirements: PaymentRequirementsV1,
    header: string | string[] | undefined,
    network: string,
    log: PaymentLog,
  ): Promise<PaidCall> {
    const o = this.#o;
    if (typeof header !== 'string' || header === '') {
      throw paymentRequired(requirements, 'PAYMENT_REQUIRED', 'X-PAYMENT header is required');
    }
    const nowSec = Math.floor(Date.now() / 1000);
    // Also refuses a validBefore past maxTimeoutSeconds, before the facilitator hears of it.
    const payment = checkPayment(header, requirements, nowSec, this.#margin);
    const id = paymentId(payment);
    const validBefore = Number(payment.payload.authorization.validBefore);
    // Held until the authorization expires: after that the chain refuses it anyway.
    const claim = await o.nonceLock.acquire(id, (validBefore - nowSec + 60) * 1000);
    if (!claim) throw new ApiError(409, 'PAYMENT_REPLAYED', 'This payment has already been used or is in use.');
    // Verified first, in a pool of its own bounded per network (429) and in total (503): a
    // forged payment waiting on a slow facilitator holds no work slot, and the `from` it
    // names counts against nobody until the facilitator has vouched for it.
    let leave: () => void;
    try {
      const leaveVerify = o.verifications.admission.enter([
        { key: `verify-ip:${network}`, max: o.verifications.perNetworkMax },
      ]);
      try {
        await verifyOrThrow(o.facilitator, payment, requirements, o.facilitatorTimeoutMs, log);
      } catch (err) {
        if (err instanceof ApiError && err.code === 'PAYMENT_INVALID') o.onPayment?.('refused');
        throw err;
      } finally {
        leaveVerify();
      }
      o.onPayment?.('verified');
      // Then the work pool: a payer or a network already in flight, or a full queue, gets an
      // immediate answer instead of a place behind work that may never pay.
      const perCallerMax = o.config.admission.perCallerMax;
      leave = o.admission.enter([
        { key: `payer:${payment.payload.authorization.from.toLowerCase()}`, max: perCallerMax },
        { key: `ip:${network}`, max: perCallerMax },
      ]);
    } catch (err) {
      await claim.release().catch(() => {});
      throw err;
    }
    // The work gets what the advertised terms promise, less the time kept for settling,
    // whatever the origin's pace or the fetcher's own (much longer) clocks.
    const maxTimeoutSec = o.config.x402.maxTimeoutSeconds;
    const workMs = Math.max(1, (Math.min(validBefore - nowSec, maxTimeoutSec) - this.#margin / 2) * 1000);
    return { requirements, payment, id, workMs, keepClaim: false, settled: false, claim, leave, validBefore };
  }

  /** Settles a call whose work succeeded and records it; answers the X-PAYMENT-RESPONSE value. */
  async settle(call: PaidCall, log: PaymentLog): Promise<string> {
    const { facilitator, config } = this.#o;
    const { requirements, payment, id } = call;
    let settle: Awaited<ReturnType<typeof facilitator.settle>>;
    try {
      // v1 shapes; the client posts them to /settle as given. Bounded by our own clock
      // as well: a settlement after validBefore cannot succeed.
      const settleMs = Math.min(this.#o.facilitatorTimeoutMs, Math.max(0, call.validBefore * 1000 - Date.now()));
      settle = await withTimeout(facilitator.settle(payment as never, requirements as never), settleMs, 'settle');
    } catch (err) {
      // Unknown outcome (timeout, network): it may have settled, so the nonce stays claimed.
      // A SettleError is the facilitator's definite `success: false`.
      call.keepClaim = (err as Error | null)?.name !== 'SettleError';
      log.error({ err, paymentId: id }, 'x402 settle failed');
      throw paymentRequired(requirements, 'PAYMENT_SETTLEMENT_FAILED', 'Settlement failed; no result is given.');
    }
    if (!settle.success) {
      this.#o.onPayment?.('refused');
      log.warn({ paymentId: id, reason: settle.errorReason }, 'x402 settle refused');
      throw paymentRequired(requirements, 'PAYMENT_SETTLEMENT_FAILED', 'Settlement failed; no result is given.', {
        reason: settle.errorReason ?? 'unknown',
      });
    }
    call.settled = true;
    this.#o.onPayment?.('settled');
    const payer = settle.payer ?? payment.payload.authorization.from;
    await this.#o.storage
      .recordPayment({
        id,
        payer,
        amount: requirements.maxAmountRequired,
        network: config.x402.network,
        asset: requirements.asset,
        payTo: requirements.payTo,
        resource: this.#o.resource,
        transaction: settle.transaction,
      })
      .catch((err: unknown) => log.error({ err, id }, 'settled payment not recorded'));
    return encodePaymentResponseHeader({
      success: true,
      transaction: settle.transaction,
      network: config.x402.network,
      payer,
    } as never);
  }

  /** Gives the work slot back, and the nonce unless the call settled or must keep it. */
  async finish(call: PaidCall): Promise<void> {
    call.leave();
    if (!call.settled && !call.keepClaim) await call.claim.release().catch(() => {});
  }
}

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
  facilitator: Facilitator,
  payment: PaymentPayloadV1,
  requirements: PaymentRequirementsV1,
  timeoutMs: number,
  log: PaymentLog,
): Promise<void> {
  const paymentId_ = paymentId(payment);
  let result: Awaited<ReturnType<Facilitator['verify']>>;
  try {
    result = await withTimeout(facilitator.verify(payment as never, requirements as never), timeoutMs, 'verify');
  } catch (err) {
    // The client library throws VerifyError for a facilitator's non-2xx `{isValid: false}`.
    const data = (err as { invalidReason?: unknown; response?: { isValid?: unknown; invalidReason?: unknown } }) ?? {};
    const reason = data.invalidReason ?? data.response?.invalidReason;
    if (typeof reason === 'string') {
      log.warn({ paymentId: paymentId_, reason }, 'x402 verify refused');
      throw paymentRequired(requirements, 'PAYMENT_INVALID', `Payment rejected: ${reason}.`, { reason });
    }
    log.error({ err, paymentId: paymentId_ }, 'x402 verify failed');
    throw new ApiError(502, 'FACILITATOR_UNAVAILABLE', 'The payment facilitator could not be reached.', { cause: err });
  }
  if (!result.isValid) {
    const reason = result.invalidReason ?? 'invalid';
    log.warn({ paymentId: paymentId_, reason }, 'x402 verify refused');
    throw paymentRequired(requirements, 'PAYMENT_INVALID', `Payment rejected: ${reason}.`, { reason });
  }
}
