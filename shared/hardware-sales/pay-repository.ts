import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import type { HwPayProvider } from '../db/types.js';

// Kysely queries of paying an order (pay.ts): the order with its open payment, and storing the
// payment the first pay opened.

const payOrderColumns = [
  'id', 'order_no', 'payment_no', 'user_id', 'sku', 'tier_code', 'final_amount_cents', 'currency',
  'payment_status', 'order_status', 'expires_at', 'pay_provider', 'pay_scene', 'pay_answer',
] as const;

/** The order by number, locked until the transaction ends when `lock` is set. */
export async function findPayOrder(db: Database, orderNo: string, lock: boolean) {
  let query = db.selectFrom('hw_orders').select(payOrderColumns).where('order_no', '=', orderNo);
  if (lock) query = query.forUpdate();
  return query.executeTakeFirst();
}

/** Bounds how long the transaction waits for a row lock (a pay behind another pay of the same order). */
export async function setLockTimeout20s(trx: Database): Promise<void> {
  await sql`SET LOCAL lock_timeout = '20s'`.execute(trx);
}

/** The order's one open payment: its channel, scene and the answer given (with, for JSAPI, the payer's openid). */
export async function storeOpenPayment(
  trx: Database, orderId: string, payment: { provider: HwPayProvider; scene: string; stored: object },
): Promise<void> {
  await trx.updateTable('hw_orders').set({
    pay_provider: payment.provider, pay_scene: payment.scene, pay_answer: JSON.stringify(payment.stored), pay_requested_at: new Date(), updated_at: new Date(),
  }).where('id', '=', orderId).execute();
}
