/** The payment ledger: each settled x402 payment, recorded once under its id. */

import type { PaymentRecord } from '../types.ts';
import type { Queryable } from './client.ts';

export async function recordPayment(db: Queryable, p: PaymentRecord): Promise<boolean> {
  const rows = await db.query(
    `INSERT INTO payments (id, payer, amount, network, asset, pay_to, resource, transaction)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING RETURNING id`,
    [p.id, p.payer, p.amount, p.network, p.asset, p.payTo, p.resource, p.transaction],
  );
  return rows.length === 1;
}

export async function getPayment(db: Queryable, id: string): Promise<(PaymentRecord & { settledAt: Date }) | null> {
  const rows = await db.query<{
    id: string;
    payer: string;
    amount: string;
    network: string;
    asset: string;
    pay_to: string;
    resource: string;
    transaction: string;
    settled_at: Date;
  }>('SELECT * FROM payments WHERE id = $1', [id]);
  const r = rows[0];
  if (!r) return null;
  return {
    id: r.id,
    payer: r.payer,
    amount: r.amount,
    network: r.network,
    asset: r.asset,
    payTo: r.pay_to,
    resource: r.resource,
    transaction: r.transaction,
    settledAt: new Date(r.settled_at),
  };
}
