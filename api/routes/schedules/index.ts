import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  createSchedule, deleteSchedule, getSchedule, listScheduleLogs, listSchedules, requireTriggerable, toScheduleLogView,
  toScheduleView, updateSchedule, type ScheduleCaller,
} from '../../../shared/schedules/service.js';
import { syncSchedule } from '../../../shared/schedules/temporal-sync.js';
import { newId } from '../../../shared/ids.js';
import { taskQueueName } from '../../../temporal/task-queues.js';
import { workflowIds } from '../../../temporal/workflow-ids.js';
import { scheduledRunStart } from '../../../shared/schedules/temporal-spec.js';
import { startWorkflowFromRequest } from '../../../shared/workflow-starts/start-path.js';
import type { ScheduledRunOutcome } from '../../../shared/schedules/contracts.js';
import { startPathDeps, type AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';

const tags = ['schedules'];
// Path ids are checked by the service so that a malformed id answers like a missing object.
const projectParams = z.object({ projectId: z.string() });
const scheduleParams = z.object({ projectId: z.string(), id: z.string() });

const scheduleView = z.object({
  id: z.string(), project_id: z.string(), team_id: z.string(), deployment_id: z.string().nullable(), name: z.string(),
  description: z.string().nullable(), cron_expression: z.string(), timezone: z.string(), trigger_config: z.record(z.string(), z.unknown()),
  enabled: z.boolean(), timeout_ms: z.number(), max_retries: z.number(),
  created_at: z.string(), updated_at: z.string(), deleted_at: z.string().nullable(),
});
const logView = z.object({
  id: z.string(), schedule_id: z.string(), project_id: z.string(), status: z.string(),
  started_at: z.string(), finished_at: z.string().nullable(), error: z.string().nullable(), result: z.record(z.string(), z.unknown()),
  run_id: z.string().nullable(), scheduled_at: z.string().nullable(),
});

/** The writable fields (§4.3). Required ones are checked by the service, for the spec's exact message. */
const fields = z.object({
  name: z.string().max(200).optional(),
  cron_expression: z.string().max(200).optional().describe('5 fields (minute hour day month weekday) or 6 with leading seconds'),
  description: z.string().max(2000).nullable().optional(),
  timezone: z.string().max(100).optional().describe('IANA name; default UTC'),
  deployment_id: z.uuid().nullable().optional(),
  trigger_config: z.object({
    inputs: z.record(z.string(), z.unknown()).optional().describe('the run inputs of every scheduled run'),
  }).loose().optional(),
  enabled: z.boolean().optional(),
  timeout_ms: z.number().int().min(1000).max(3_600_000).optional().describe('default: site setting schedule.default_timeout_ms; capped by run.max_timeout_seconds'),
  max_retries: z.number().int().min(0).max(10).optional(),
});

function callerOf(request: FastifyRequest): ScheduleCaller {
  const principal = principalOf(request, 'jwt', 'api-key');
  return principal.kind === 'jwt' ? { kind: 'jwt', userId: principal.userId } : { kind: 'api-key', userId: principal.userId, teamId: principal.teamId };
}

/** Schedules (spec §4.3): rows in PostgreSQL, each one a Temporal Schedule `schedule-<id>`. */
export const scheduleRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db, settings } = deps;
  const target = { client: deps.temporal.client, taskQueueSuffix: deps.config.TEMPORAL_TASK_QUEUE_SUFFIX };
  /** The row is the truth: when Temporal cannot be reached the reconciler catches up later. */
  const sync = async (scheduleId: string, log: FastifyBaseLogger) => {
    try {
      await syncSchedule(db, target, scheduleId);
    } catch (error) {
      log.warn({ err: error, scheduleId }, 'Temporal Schedule not updated; the reconciler will retry');
    }
  };
  const base = '/projects/:projectId/schedules';

  app.get(base, {
    config: { access: 'combined' },
    schema: { tags, summary: 'List the project schedules, newest first', params: projectParams, response: { 200: z.object({ schedules: z.array(scheduleView) }) } },
  }, async (request) => ({ schedules: (await listSchedules(db, callerOf(request), request.params.projectId)).map(toScheduleView) }));

  app.get(`${base}/:id`, {
    config: { access: 'combined' },
    schema: { tags, summary: 'Read a schedule', params: scheduleParams, response: { 200: z.object({ schedule: scheduleView }) } },
  }, async (request) => ({ schedule: toScheduleView(await getSchedule(db, callerOf(request), request.params.projectId, request.params.id)) }));

  app.post(base, {
    config: { access: 'combined' },
    schema: { tags, summary: 'Create a schedule (project administrators)', params: projectParams, body: fields, response: { 201: z.object({ schedule: scheduleView }) } },
  }, async (request, reply) => {
    const row = await createSchedule(db, settings, callerOf(request), request.params.projectId, request.body);
    await sync(row.id, request.log);
    reply.code(201);
    return { schedule: toScheduleView(row) };
  });

  app.put(`${base}/:id`, {
    config: { access: 'combined' },
    schema: { tags, summary: 'Change any subset of a schedule\'s fields (project administrators)', params: scheduleParams, body: fields, response: { 200: z.object({ schedule: scheduleView }) } },
  }, async (request) => {
    const row = await updateSchedule(db, settings, callerOf(request), request.params.projectId, request.params.id, request.body);
    await sync(row.id, request.log);
    return { schedule: toScheduleView(row) };
  });

  app.delete(`${base}/:id`, {
    config: { access: 'combined' },
    schema: { tags, summary: 'Soft-delete and disable a schedule (project administrators)', params: scheduleParams, response: { 200: z.object({ success: z.literal(true) }) } },
  }, async (request) => {
    await deleteSchedule(db, callerOf(request), request.params.projectId, request.params.id);
    await sync(request.params.id, request.log);
    return { success: true as const };
  });

  app.post(`${base}/:id/trigger`, {
    config: { access: 'combined' },
    schema: {
      tags, summary: 'Run the schedule once now and wait for the result', params: scheduleParams,
      response: { 200: z.object({ success: z.literal(true), result: z.unknown() }), 500: z.object({ success: z.literal(false), error: z.string() }) },
    },
  }, async (request, reply) => {
    const row = await requireTriggerable(db, callerOf(request), request.params.projectId, request.params.id);
    const workflowId = workflowIds.manualScheduledRun(row.id, newId());
    // The caller waits for the result, so during an outage it is told 503 rather than queued.
    await startWorkflowFromRequest(startPathDeps(deps), {
      workflowId, workflowType: 'scheduledRunWorkflow', taskQueue: taskQueueName('appRuns', deps.config.TEMPORAL_TASK_QUEUE_SUFFIX),
      args: [{ scheduleId: row.id, manual: true }], ...scheduledRunStart(row),
    }, 'refuse');
    const outcome: ScheduledRunOutcome = await deps.temporal.client.workflow.getHandle(workflowId).result();
    if (outcome.success) return { success: true as const, result: outcome.result };
    return reply.code(500).send({ success: false as const, error: outcome.error });
  });

  app.get(`${base}/:id/logs`, {
    config: { access: 'combined' },
    schema: {
      tags, summary: 'The schedule\'s run log, newest first', params: scheduleParams,
      querystring: z.object({ limit: z.coerce.number().int().min(1).max(500).default(50), offset: z.coerce.number().int().min(0).default(0) }),
      response: { 200: z.object({ logs: z.array(logView), total: z.number(), limit: z.number(), offset: z.number() }) },
    },
  }, async (request) => {
    const { limit, offset } = request.query;
    const { logs, total } = await listScheduleLogs(db, callerOf(request), request.params.projectId, request.params.id, { limit, offset });
    return { logs: logs.map(toScheduleLogView), total, limit, offset };
  });
};
