import type { Client } from '@temporalio/client';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { changeOrderAddress, orderNotFound, type AddressChange, type AddressChangeResult } from './address-change.js';
import { confirmReceiptUpdate, type OrderStepResult } from './messages.js';
import { orderNoPattern } from './numbers.js';
import { sendOrderStep } from './order-updates.js';
import { findOrderByNo } from './orders-repository.js';
import { buyerOrderDetail, lookupOrderView, type LookupView, type OrderDetail, type ViewLang } from './order-views.js';
import { findUserPhone } from './phone-login/phone-login-repository.js';

// Hardware sales as the routes (api/routes/hardware-sales) call it (docs/hardware-sales.md): one
// entry. The use cases live in their own modules, one reason to change each (order creation,
// quotes, paying, the buyer's orders, friend codes, the channels' reports, phone login); this file
// names them, and holds what the routes used to do themselves: not-found answers and the reads
// behind them. Queries live only in the *-repository.ts files; the order saga's steps and their
// undos in saga-steps/.

export { getSkuConfig } from './catalogue.js';
export { assertOrderWithinLimits, createOrder } from './order-create.js';
export { assertQuoteWithinLimits, quoteOrder } from './quote.js';
export { payOrder } from './pay.js';
export { buyerOrderList } from './order-views.js';
export { deriveFriendCode, listFriendCodeOrders, listMyFriendCodes } from './friend-codes.js';
export { reportPayment, reportRefund } from './payment-reports.js';
export { findOrderByPaymentNo } from './payment-events-repository.js';
export { verifyPhoneToken } from './phone-tokens.js';
export { bindPhone, sendOtp, verifyOtpLogin, type PhoneLoginDeps } from './phone-login/service.js';

/** The verified phone of a signed-in buyer's account, or null. */
export async function accountPhone(db: Database, userId: string): Promise<string | null> {
  return findUserPhone(db, userId);
}

/** One of the buyer's orders in full; `orderNo` null (malformed) answers like a missing or foreign order. */
export async function getBuyerOrder(db: Database, userId: string, orderNo: string | null, lang: ViewLang): Promise<OrderDetail> {
  const detail = orderNo === null ? undefined : await buyerOrderDetail(db, userId, orderNo, lang);
  if (!detail) throw orderNotFound();
  return detail;
}

/** The buyer's address change; `orderNo` null (malformed) answers like a missing or foreign order. */
export async function changeBuyerOrderAddress(
  db: Database, change: Omit<AddressChange, 'orderNo'> & { orderNo: string | null },
): Promise<AddressChangeResult> {
  if (change.orderNo === null) throw orderNotFound();
  return changeOrderAddress(db, { ...change, orderNo: change.orderNo });
}

/** The buyer confirms receipt of a shipped order: the saga's receipt step (404 for a missing or foreign order). */
export async function confirmBuyerReceipt(deps: { db: Database; temporal: Client }, userId: string, orderNo: string): Promise<OrderStepResult> {
  const order = orderNoPattern.test(orderNo) ? await findOrderByNo(deps.db, orderNo) : undefined;
  if (!order || order.user_id !== userId) throw orderNotFound();
  return sendOrderStep(deps, order, 'receipt', confirmReceiptUpdate, { userId });
}

const notFoundOrMismatch = () => new AppError(404, 'ORDER_NOT_FOUND_OR_PHONE_MISMATCH', 'No order matches this order number and phone');

/**
 * An order by its number and a phone, masked, for anyone who knows both. A malformed number still
 * costs the same query as a well-formed one (matching nothing), so the answer's timing does not
 * tell which guesses have the right shape; a missing order and a wrong phone are one 404.
 */
export async function lookUpOrder(db: Database, orderNo: string, phone: string, lang: ViewLang): Promise<LookupView> {
  const view = await lookupOrderView(db, orderNoPattern.test(orderNo) ? orderNo : '', phone, lang);
  if (!view) throw notFoundOrMismatch();
  return view;
}
