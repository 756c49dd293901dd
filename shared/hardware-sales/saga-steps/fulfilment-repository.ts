import type { Database } from '../../db/client.js';
import { appendOrderEvent } from '../order-events-repository.js';
import type { ShipmentInput } from '../messages.js';

// The saga's fulfilment steps: the operator's prepare and ship (`advanceOrderFulfilment`) and the
// buyer's receipt (`confirmOrderReceipt`). They have no undo of their own: a refund of an order not
// yet shipped cancels it (refund-repository.ts), and a shipped one stays shipped.

/** awaiting_stock → preparing, or preparing → shipped (carrier and tracking number); false when the order was not there. */
export async function advanceOrderFulfilment(db: Database, orderId: string, step: 'prepare' | 'ship', shipment?: ShipmentInput): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const now = new Date();
    const query = trx.updateTable('hw_orders').where('id', '=', orderId)
      .where((eb) => eb.or([eb('refund_status', 'is', null), eb('refund_status', 'not in', ['processing', 'succeeded'])]));
    const moved = step === 'prepare'
      ? await query.set({ fulfillment_status: 'preparing', updated_at: now }).where('fulfillment_status', '=', 'awaiting_stock').returning('id').executeTakeFirst()
      : await query.set({
        fulfillment_status: 'shipped', order_status: 'shipped', carrier: shipment!.carrier, tracking_no: shipment!.trackingNo, shipped_at: now, updated_at: now,
      }).where('fulfillment_status', '=', 'preparing').returning('id').executeTakeFirst();
    if (!moved) return false;
    await appendOrderEvent(trx, orderId, step === 'prepare' ? 'preparing' : 'shipped', 'operator',
      step === 'ship' ? { carrier: shipment!.carrier, trackingNo: shipment!.trackingNo } : {});
    return true;
  });
}

/** shipped → delivered by the buyer, with the user-sourced `receipt_confirmed` audit event in the same transaction. */
export async function confirmOrderReceipt(db: Database, orderId: string, userId: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const now = new Date();
    const delivered = await trx.updateTable('hw_orders')
      .set({ fulfillment_status: 'delivered', order_status: 'delivered', delivered_at: now, updated_at: now })
      .where('id', '=', orderId).where('user_id', '=', userId).where('fulfillment_status', '=', 'shipped')
      .returning('id').executeTakeFirst();
    if (!delivered) return false;
    await appendOrderEvent(trx, orderId, 'receipt_confirmed', 'user', { userId });
    return true;
  });
}
