import { SearchAttributeType, defineSearchAttributeKey } from '@temporalio/common';
import { executeChild, isCancellation, patched, proxyActivities, proxyLocalActivities, sleep, uuid4, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { ScheduledRunInput, ScheduledRunOutcome } from '../../shared/schedules/contracts.js';
import { SCHEDULED_FIRE_TASK_TIMEOUT, databaseActivity, scheduleStepLocalActivity } from '../../temporal/activity-options.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { appRunWorkflow } from '../app-runs/run-app.js';

const localSteps = proxyLocalActivities<Activities>(scheduleStepLocalActivity);
/** Fires started before the steps became local replay with them as activities. */
const activitySteps = proxyActivities<Activities>(databaseActivity);

/** Set by Temporal on every workflow a Schedule starts: the fire time it was meant for. */
const scheduledStartTime = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

/** Seconds to wait before retry `n` (1-based): 1, 2, 4 … capped at 30. */
const retryDelaySeconds = (n: number) => Math.min(2 ** (n - 1), 30);

/**
 * One firing of a schedule (`scheduled-run-<scheduleId>-<fire time>`, or `…-manual-<id>`). Each
 * attempt records a run through the usual pipeline, runs it as the child `app-run-<runId>` with the
 * schedule's timeout, and closes its log row; a run that does not complete is retried with a new
 * run up to `max_retries` times.
 */
export async function scheduledRunWorkflow(input: ScheduledRunInput): Promise<ScheduledRunOutcome> {
  const info = workflowInfo();
  const manual = input.manual === true;
  const scheduledAt = manual ? null : info.typedSearchAttributes.get(scheduledStartTime)?.toISOString() ?? null;
  // Local steps: a worker that dies mid-fire holds the fire for one short task timeout (temporal/activity-options.ts).
  const { startScheduledRunAttempt, finishScheduledRunAttempt } = patched('scheduled-run-local-steps') ? localSteps : activitySteps;
  for (let attempt = 0; ; attempt += 1) {
    const logId = uuid4();
    const started = await startScheduledRunAttempt({
      scheduleId: input.scheduleId, logId, scheduledAt, manual, attemptKey: `${info.workflowId}/${info.runId}/${attempt}`,
    });
    if (started.kind === 'skipped') return { success: false, error: started.reason, skipped: true };
    if (started.kind === 'refused') return { success: false, error: started.error };
    try {
      await executeChild(appRunWorkflow, {
        workflowId: workflowIds.appRun(started.runId),
        taskQueue: info.taskQueue,
        workflowTaskTimeout: SCHEDULED_FIRE_TASK_TIMEOUT,
        args: [started.workflowInput ?? { runId: started.runId, trace: false, timeoutSeconds: started.timeoutSeconds ?? null }],
        ...started.startOptions,
      });
    } catch (error) {
      if (isCancellation(error)) throw error;
      // The run workflow records its own terminal event even when it fails; the log reads it.
    }
    const finished = await finishScheduledRunAttempt({ logId, runId: started.runId });
    if (finished.status === 'success') return { success: true, result: finished.result };
    if (attempt >= started.maxRetries) return { success: false, error: finished.error ?? 'The run did not complete', result: finished.result };
    await sleep(retryDelaySeconds(attempt + 1) * 1000);
  }
}
