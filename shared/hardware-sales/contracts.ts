import type { WorkflowStart } from '../workflow-starts/outbox.js';
import { taskQueueName } from '../../temporal/task-queues.js';
import { workflowIds } from '../../temporal/workflow-ids.js';

// The contract between the order endpoints and the order saga (workflows/hardware-sales/): what
// starts it and with which input. Numbers: an order is `HWO…`, its payment `HWSP…` (the channel's
// `out_trade_no`), a refund `HWSR…` (CONTRACTS.md "Hardware sales").

/** The saga's only argument: everything else it reads from PostgreSQL through activities. */
export interface OrderSagaInput {
  orderId: string;
  orderNo: string;
  /** When an unpaid order expires (ms since the epoch): `hardware_sales.order_ttl_seconds` after creation. */
  expiresAtMs: number;
}

/** The saga's start, recorded with the order in its transaction (the outbox) and made right after. */
export function orderSagaStart(input: OrderSagaInput, taskQueueSuffix?: string): WorkflowStart {
  return {
    workflowId: workflowIds.hardwareOrder(input.orderNo),
    workflowType: 'hardwareOrderWorkflow',
    taskQueue: taskQueueName('hardwareSales', taskQueueSuffix),
    args: [input],
    search: { teamId: 'hardware-sales', triggerSource: 'order' },
    staticSummary: `Hardware order ${input.orderNo}`,
  };
}
