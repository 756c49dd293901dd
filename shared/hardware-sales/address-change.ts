import type { Database } from '../db/client.js';
import type { HwAddress } from '../db/types.js';
import { AppError } from '../errors.js';
import { maskAddress, type MaskedAddress } from './masking.js';
import { appendOrderEvent } from './order-events-repository.js';
import { lockOrderForAddressChange, setOrderAddress } from './orders-repository.js';

// The buyer's address change (spec §3.2, §4.9 rule 4): one transaction that locks the order row.
// The saga's ship step (saga-steps/fulfilment-repository.ts advanceOrderFulfilment) is one UPDATE of the same row,
// so it waits for this lock or this waits for it: an order that has shipped is seen as shipped
// here and refused, and an address written here is the one the ship step ships to.

export interface AddressChange {
  userId: string;
  orderNo: string;
  address: HwAddress;
  /** The `address_version` the client read; a different current version is 409 `ADDRESS_VERSION_CONFLICT`. */
  version?: number;
}

export interface AddressChangeResult {
  address: MaskedAddress;
  version: number;
}

export const orderNotFound = () => new AppError(404, 'ORDER_NOT_FOUND', 'Order not found');

export async function changeOrderAddress(db: Database, change: AddressChange): Promise<AddressChangeResult> {
  return db.transaction().execute(async (trx) => {
    const order = await lockOrderForAddressChange(trx, change.orderNo);
    if (!order || order.user_id !== change.userId) throw orderNotFound();
    const changeable = order.order_status === 'open' && order.shipped_at === null
      && ['not_paid', 'awaiting_stock', 'preparing'].includes(order.fulfillment_status);
    if (!changeable) throw new AppError(409, 'ORDER_STATE_INVALID', `The order is ${order.fulfillment_status}; its address can no longer be changed`);
    if (change.version !== undefined && change.version !== order.address_version) {
      throw new AppError(409, 'ADDRESS_VERSION_CONFLICT', 'The address changed since it was read; refresh the order and try again');
    }
    const version = order.address_version + 1;
    await setOrderAddress(trx, order.id, change.address, version);
    await appendOrderEvent(trx, order.id, 'address_changed', 'user', { version });
    return { address: maskAddress(change.address), version };
  });
}
