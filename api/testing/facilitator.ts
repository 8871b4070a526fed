/**
 * A local x402 v1 facilitator for tests, spoken to over real HTTP like the hosted one:
 * `/verify` really checks the EIP-712 signature of the EIP-3009 TransferWithAuthorization
 * (viem recovers the signer) against the requirements, and `/settle` re-checks, refuses a
 * nonce already settled (as the token contract would) and records the settlement instead
 * of sending a transaction — the one part that needs a chain, which tests cannot reach.
 */

import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Address, type Hex, verifyTypedData } from 'viem';
import { closeServer } from '../../test-support/servers.ts';
import type { PaymentPayloadV1, PaymentRequirementsV1 } from '../x402/payment.ts';

const CHAIN_ID: Record<string, number> = { base: 8453, 'base-sepolia': 84532 };

const TRANSFER_WITH_AUTHORIZATION = [
  { name: 'from', type: 'address' },
  { name: 'to', type: 'address' },
  { name: 'value', type: 'uint256' },
  { name: 'validAfter', type: 'uint256' },
  { name: 'validBefore', type: 'uint256' },
  { name: 'nonce', type: 'bytes32' },
] as const;

export interface Settlement {
  payer: string;
  nonce: string;
  value: string;
  payTo: string;
  transaction: string;
}

export class LocalFacilitator {
  readonly settlements: Settlement[] = [];
  verifyCalls = 0;
  settleCalls = 0;
  /** When set, /settle answers `{success: false}` with this reason. */
  failSettle: string | null = null;
  /** When set, that endpoint reads the request and never answers (a facilitator that hangs). */
  hang: 'verify' | 'settle' | null = null;
  /** When set, a /verify that refuses answers only after this many ms (slow on forged payments). */
  slowRefusalMs = 0;
  #server: Server | undefined;
  url = '';

  async start(): Promise<this> {
    this.#server = createServer(async (req, res) => {
      try {
        const body = JSON.parse(await readBody(req)) as {
          paymentPayload: PaymentPayloadV1;
          paymentRequirements: PaymentRequirementsV1;
        };
        let answer: Record<string, unknown>;
        if (this.hang !== null && req.url === `/${this.hang}`) {
          if (this.hang === 'verify') this.verifyCalls++;
          else this.settleCalls++;
          return; // close() cuts the socket
        }
        if (req.method === 'POST' && req.url === '/verify') {
          this.verifyCalls++;
          answer = await this.verify(body.paymentPayload, body.paymentRequirements);
          if (answer.isValid === false && this.slowRefusalMs > 0) {
            await new Promise((r) => setTimeout(r, this.slowRefusalMs));
          }
        } else if (req.method === 'POST' && req.url === '/settle') {
          this.settleCalls++;
          answer = await this.settle(body.paymentPayload, body.paymentRequirements);
        } else {
          res.writeHead(404).end();
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      } catch (err) {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: String(err) }));
      }
    });
    await new Promise<void>((r) => this.#server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    await closeServer(this.#server);
  }

  async verify(
    p: PaymentPayloadV1,
    r: PaymentRequirementsV1,
  ): Promise<{ isValid: boolean; invalidReason?: string; payer?: string }> {
    const a = p.payload?.authorization;
    const payer = a?.from;
    const no = (invalidReason: string) => ({ isValid: false, invalidReason, ...(payer ? { payer } : {}) });
    if (p.x402Version !== 1 || p.scheme !== 'exact' || r.scheme !== 'exact') return no('unsupported_scheme');
    if (p.network !== r.network || CHAIN_ID[r.network] === undefined) return no('invalid_network');
    if (!a) return no('invalid_payload');
    if (a.to.toLowerCase() !== r.payTo.toLowerCase()) return no('invalid_exact_evm_payload_recipient_mismatch');
    if (BigInt(a.value) < BigInt(r.maxAmountRequired)) return no('invalid_exact_evm_payload_authorization_value');
    const now = BigInt(Math.floor(Date.now() / 1000));
    if (BigInt(a.validBefore) < now + 2n) return no('invalid_exact_evm_payload_authorization_valid_before');
    if (BigInt(a.validAfter) > now) return no('invalid_exact_evm_payload_authorization_valid_after');
    const ok = await verifyTypedData({
      address: a.from as Address,
      domain: {
        name: r.extra.name,
        version: r.extra.version,
        chainId: CHAIN_ID[r.network]!,
        verifyingContract: r.asset as Address,
      },
      types: { TransferWithAuthorization: TRANSFER_WITH_AUTHORIZATION },
      primaryType: 'TransferWithAuthorization',
      message: {
        from: a.from as Address,
        to: a.to as Address,
        value: BigInt(a.value),
        validAfter: BigInt(a.validAfter),
        validBefore: BigInt(a.validBefore),
        nonce: a.nonce as Hex,
      },
      signature: p.payload.signature as Hex,
    }).catch(() => false);
    if (!ok) return no('invalid_exact_evm_payload_signature');
    if (this.#used(a.from, a.nonce)) return no('invalid_exact_evm_payload_authorization_nonce_used');
    return { isValid: true, payer: a.from };
  }

  async settle(p: PaymentPayloadV1, r: PaymentRequirementsV1): Promise<Record<string, unknown>> {
    const v = await this.verify(p, r);
    if (!v.isValid) return { success: false, errorReason: v.invalidReason, transaction: '', network: r.network };
    if (this.failSettle) return { success: false, errorReason: this.failSettle, transaction: '', network: r.network };
    const a = p.payload.authorization;
    const transaction = `0x${randomBytes(32).toString('hex')}`;
    this.settlements.push({ payer: a.from, nonce: a.nonce, value: a.value, payTo: a.to, transaction });
    return { success: true, transaction, network: r.network, payer: a.from };
  }

  #used(from: string, nonce: string): boolean {
    return this.settlements.some((s) => s.payer.toLowerCase() === from.toLowerCase() && s.nonce === nonce);
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > 1_000_000) throw new Error('body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
