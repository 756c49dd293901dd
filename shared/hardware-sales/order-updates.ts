import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure, type UpdateDefinition } from '@temporalio/common';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { orderFailureTypes, type OrderStepResult } from './messages.js';
import { findOrderByNo, type StepOrderRow as OrderRow } from './orders-repository.js';
import { refusalOf, type OrderStep } from './transitions.js';

// Sending a step to an order's saga (the operator's prepare, ship and refund; the buyer's receipt)
// and answering as spec §7.5 says: the database answers the obvious refusals at once, the saga's
// validator decides the rest, and a saga that has finished means the order is past that step.

const refusalError = (type: string, message: string) => new AppError(409, type, message);

function refusalFromState(step: OrderStep, order: OrderRow): AppError | null {
  const refusal = refusalOf(step, { paymentStatus: order.payment_status, fulfillmentStatus: order.fulfillment_status, refundStatus: order.refund_status });
  return refusal && refusalError(refusal.type, refusal.message);
}

/**
 * Runs `update` on the order's saga and returns the order after the step. 409 with the step's
 * failure type when the order's state does not allow it (checked first against the row, then by
 * the saga's validator, which holds the authoritative state).
 */
export async function sendOrderStep<Args extends unknown[]>(
  deps: { db: Database; temporal: Client }, order: OrderRow, step: OrderStep, update: UpdateDefinition<OrderStepResult, Args>, ...args: Args
): Promise<OrderStepResult> {
  const early = refusalFromState(step, order);
  if (early) throw early;
  const handle = deps.temporal.workflow.getHandle(workflowIds.hardwareOrder(order.order_no));
  for (let attempt = 1; ; attempt++) {
    try {
      // The update's name carries its type; the generic overloads cannot follow a generic Args.
      return await handle.executeUpdate<OrderStepResult, [unknown, ...unknown[]]>(update.name, { args: args as unknown as [unknown, ...unknown[]] });
    } catch (error) {
      const refusal = refusalIn(error);
      if (refusal) {
        // A step's activity writes the row before the saga has seen its result: for a moment the
        // row may allow what the saga does not yet. Ask again while that lasts; else the refusal stands.
        const current = (await findOrderByNo(deps.db, order.order_no)) ?? order;
        if (refusalFromState(step, current) || attempt >= SAGA_CATCH_UP_ATTEMPTS) throw refusal;
        await new Promise((resolve) => setTimeout(resolve, SAGA_CATCH_UP_PAUSE_MS));
        continue;
      }
      if (error instanceof WorkflowNotFoundError) {
        // The saga has finished: the order is expired, refunded or past its refund window.
        const current = (await findOrderByNo(deps.db, order.order_no)) ?? order;
        throw refusalFromState(step, current) ?? refusalError(step === 'refund' ? 'REFUND_NOT_ALLOWED' : 'ORDER_STATE_INVALID', 'The order is closed');
      }
      throw error;
    }
  }
}

const SAGA_CATCH_UP_ATTEMPTS = 20;
const SAGA_CATCH_UP_PAUSE_MS = 100;

/** The saga's refusal of a step (its validator or its step's own check), as the API answers it. */
function refusalIn(error: unknown): AppError | null {
  if (!(error instanceof WorkflowUpdateFailedError) || !(error.cause instanceof ApplicationFailure)) return null;
  const type = error.cause.type ?? '';
  if ((orderFailureTypes as readonly string[]).includes(type)) return refusalError(type, error.cause.message);
  if (type === 'NOT_CONFIGURED') throw new AppError(503, 'NOT_CONFIGURED', error.cause.message);
  return null;
}
