import { randomUUID } from 'node:crypto';
import type { AppDeps } from '../../api/deps.js';
import { createDocument } from '../../shared/documents/service.js';
import { publishDocument } from '../../shared/publishing/service.js';
import { grantCredits } from '../../shared/billing/service.js';
import { createProject, createTeam, createUser } from '../../shared/identity/service.js';
import { createSchedule, deleteSchedule } from '../../shared/schedules/service.js';
import { syncSchedule } from '../../shared/schedules/temporal-sync.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { taskQueueName } from '../../temporal/task-queues.js';
import { workflowIds } from '../../temporal/workflow-ids.js';

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Firing delay of an every-2-seconds schedule (6-field cron) (the fire time Temporal meant → the run recorded),
 * against the floor: the same scheduled-run workflow started directly by a client (start call → run recorded).
 */
export async function benchSchedules(deps: AppDeps, firings = 15): Promise<string[]> {
  const { db, settings } = deps;
  const user = await createUser(db, { email: `bench-${randomUUID()}@example.com` });
  const team = await createTeam(db, { ownerId: user.id, name: 'Bench schedules', plan: 'pro' });
  await grantCredits(db, { teamId: team.id, amountMilli: 100_000_000 });
  const project = await createProject(db, { teamId: team.id, name: 'Bench schedules' });
  const operator = { kind: 'operator' } as const;
  const graph = { blocks: [{ id: 'o', type: 'output', name: 'o', config: { value: '{{_trigger.source}}' } }], edges: [] };
  const document = await createDocument(db, operator, { projectId: project.id, name: 'tick', graph });
  const deployment = await publishDocument(db, operator, document.id, {});
  // CONTRACTS.md: a faster-than-plan schedule lowers minIntervalSeconds; the check still runs.
  await upsertSiteSetting(db, 'team.quota_limits.schedules', { pro: { maxEnabled: 20, minIntervalSeconds: 1 } });
  settings.invalidate();
  const caller = { kind: 'jwt', userId: user.id } as const;
  const target = { client: deps.temporal.client, taskQueueSuffix: deps.config.TEMPORAL_TASK_QUEUE_SUFFIX };
  const logRows = (scheduleId: string) => db.selectFrom('schedule_logs').select(['scheduled_at', 'started_at'])
    .where('schedule_id', '=', scheduleId).orderBy('started_at').execute();

  const fired = await createSchedule(db, settings, caller, project.id, { name: 'every-2s', cron_expression: '*/2 * * * * *', deployment_id: deployment.id });
  await syncSchedule(db, target, fired.id);
  const deadline = Date.now() + (firings * 2 + 20) * 1000;
  while ((await logRows(fired.id)).length < firings + 1 && Date.now() < deadline) await sleep(500);
  await deleteSchedule(db, caller, project.id, fired.id);
  await syncSchedule(db, target, fired.id);
  // The first firing may land while the worker's caches warm up; it is left out.
  const delays = (await logRows(fired.id)).slice(1).filter((r) => r.scheduled_at)
    .map((r) => r.started_at.getTime() - r.scheduled_at!.getTime()).sort((a, b) => a - b);

  const direct = await createSchedule(db, settings, caller, project.id, { name: 'direct', cron_expression: '0 0 1 1 *', deployment_id: deployment.id, enabled: false });
  const floor: number[] = [];
  for (let i = 0; i < firings; i++) {
    const before = (await logRows(direct.id)).length;
    const t0 = Date.now();
    const handle = await deps.temporal.client.workflow.start('scheduledRunWorkflow', {
      taskQueue: taskQueueName('appRuns', deps.config.TEMPORAL_TASK_QUEUE_SUFFIX), workflowId: workflowIds.manualScheduledRun(direct.id, randomUUID()),
      args: [{ scheduleId: direct.id, manual: true }],
    });
    await handle.result();
    const rows = await logRows(direct.id);
    if (rows.length > before) floor.push(rows.at(-1)!.started_at.getTime() - t0);
  }
  floor.sort((a, b) => a - b);

  const ms = (v: number) => `${v.toFixed(0)} ms`;
  if (delays.length === 0) return ['| schedule firing delay | no firing recorded | | goal p99 ≤ 1 s |'];
  return [
    `| schedule */2 s firing delay p50 / p99 (n=${delays.length}) | ${ms(percentile(delays, 0.5))} / ${ms(percentile(delays, 0.99))} | floor: same workflow started by a client p50 ${ms(percentile(floor, 0.5))} / p99 ${ms(percentile(floor, 0.99))} | ${(percentile(delays, 0.99) / percentile(floor, 0.99)).toFixed(2)}× at p99 (goal p99 ≤ 1 s) |`,
  ];
}
