import type { Database } from '../db/client.js';
import type { HwEventSource } from '../db/types.js';

// An order's timeline (hw_order_events): every step of the saga and every change the buyer makes
// writes its event in the transaction that makes the change.

export async function appendOrderEvent(
  db: Database, orderId: string, type: string, source: HwEventSource, detail: Record<string, unknown> = {}, userVisible = true,
): Promise<void> {
  await db.insertInto('hw_order_events')
    .values({ order_id: orderId, type, source, user_visible: userVisible, detail: JSON.stringify(detail), created_at: new Date() })
    .execute();
}
