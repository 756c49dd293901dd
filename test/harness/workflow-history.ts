import type { Client } from '@temporalio/client';
import type { AppRunInput } from '../../shared/app-runs/contracts.js';
import { workflowIds } from '../../temporal/workflow-ids.js';

const decode = (data: unknown) => (data instanceof Uint8Array ? Buffer.from(data).toString('utf8') : Buffer.from(String(data), 'base64').toString('utf8'));

/**
 * An app run's workflow history once its workflow has closed (the API answers earlier, and a failed
 * workflow still has one): its events, its argument, and all of it as text with payloads decoded,
 * so a test can say which activities it names.
 */
export async function appRunHistoryOf(client: Client, runId: string) {
  const handle = client.workflow.getHandle(workflowIds.appRun(runId));
  await handle.result().catch(() => undefined);
  const events = (await handle.fetchHistory()).events ?? [];
  const argument = JSON.parse(decode(events[0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!.data)) as AppRunInput;
  const text = JSON.stringify(events, (key, v: unknown) => (v instanceof Uint8Array || (key === 'data' && typeof v === 'string') ? decode(v) : v));
  return { events, argument, text };
}
