import { sql } from 'kysely';
import { admitRun, type AdmittedRun, type RunServiceDeps } from '../app-runs/run-service.js';
import { randomBase64Url, sha256Hex } from '../crypto.js';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { isTeamMember } from '../identity/team-access.js';
import { assertWithinLimits, perMinute } from '../rate-limit/limits.js';
import type { RateLimiter } from '../rate-limit/rate-limiter.js';
import { planStart, startRecordedWorkflow, type StartPathDeps } from '../workflow-starts/start-path.js';
import { taskQueueName } from '../../temporal/task-queues.js';
import type { MailInputs } from './mail.js';
import { bindingHold, liveDeploymentOf, loadBindingState } from './polling.js';

// Dispatch (spec §4.12, docs/connectors.md "Dispatch"): the polling workflow's dispatcher leases
// one pending dispatch under a 60-second token; `POST /api/connector-triggers/dispatch` takes only
// that token, checks everything again in the database, and turns the ledger's mail into a run
// through the run pipeline. The lease's consumption and the charged run commit together, so a
// replayed token can never run (or charge) twice.

export const DISPATCH_TOKEN_TTL_SECONDS = 60;
const TOKEN = /^cdt_[A-Za-z0-9_-]{43}$/;

/** The same answer for every failed verification: the reason is not told (spec §4.12). */
export const dispatchNotFound = () => new AppError(404, 'not_found', 'Not found');
const notExecuted = (message: string) => new AppError(409, 'not_executed', message);

/**
 * A new token for a pending dispatch: it replaces the last one (only the newest works), and pins
 * the deployment the run is for. Null when the dispatch is no longer pending.
 */
export async function issueDispatchToken(db: Database, dispatchId: string): Promise<string | null> {
  const row = await db.selectFrom('connector_dispatches as d').innerJoin('connector_bindings as b', 'b.id', 'd.binding_id')
    .select(['d.status', 'b.document_id']).where('d.id', '=', dispatchId).executeTakeFirst();
  if (!row || row.status !== 'pending') return null;
  const deployment = await liveDeploymentOf(db, row.document_id);
  const token = `cdt_${randomBase64Url(32)}`;
  const leased = await db.updateTable('connector_dispatches')
    .set({
      lease_token_hash: sha256Hex(token), lease_expires_at: sql<Date>`now() + make_interval(secs => ${DISPATCH_TOKEN_TTL_SECONDS})`,
      lease_deployment_id: deployment?.id ?? null, attempts: sql<number>`attempts + 1`, updated_at: sql<Date>`now()`,
    })
    .where('id', '=', dispatchId).where('status', '=', 'pending').executeTakeFirst();
  return leased.numUpdatedRows > 0n ? token : null;
}

/** Records what the dispatcher heard back, for operators (`last_outcome`); a 404 drops the dispatch for good. */
export async function noteDispatchOutcome(db: Database, dispatchId: string, outcome: string, drop: boolean): Promise<void> {
  await db.updateTable('connector_dispatches')
    .set({ last_outcome: outcome, ...(drop ? { status: 'dropped' as const } : {}), updated_at: sql<Date>`now()` })
    .where('id', '=', dispatchId).where('status', '=', 'pending').execute();
}

export interface DispatchDeps extends RunServiceDeps, StartPathDeps {
  rateLimiter: RateLimiter;
  taskQueueSuffix?: string;
}

const mailOf = (event: { subject: string; from_header: string; to_header: string; sent_at: string; text_body: string; message_id: string }): MailInputs => ({
  subject: event.subject, from: event.from_header, to: event.to_header, date: event.sent_at, text: event.text_body, messageId: event.message_id,
});

/** Verifies a dispatch token and starts its run: the run id, or 402 / 404 / 409 / 429 (spec §4.12). */
export async function dispatchByToken(deps: DispatchDeps, token: string | undefined): Promise<{ runId: string }> {
  const { db } = deps;
  if (!token || !TOKEN.test(token)) throw dispatchNotFound();
  const hash = sha256Hex(token);
  const lease = await db.selectFrom('connector_dispatches')
    .select(['id', 'binding_id', 'event_id', 'status', 'lease_token_hash', 'lease_deployment_id', sql<boolean>`lease_expires_at > now()`.as('live')])
    .where('lease_token_hash', '=', hash).executeTakeFirst();
  // Unknown, replaced by a newer token, expired, or already consumed: all the same 404.
  if (!lease || !lease.live || lease.status !== 'pending') throw dispatchNotFound();

  const binding = await loadBindingState(db, lease.binding_id);
  const hold = bindingHold(binding);
  if (hold?.hold === 'stop') throw dispatchNotFound();
  // Ownership: the binding is its connection owner's, who must still be on the document's team.
  const deployment = await liveDeploymentOf(db, binding!.document_id);
  if (binding!.created_by !== binding!.connection_owner) throw dispatchNotFound();
  if (deployment && !(await isTeamMember(db, deployment.team_id, binding!.connection_owner))) throw dispatchNotFound();
  // Transient: the breaker, a connection being re-tested, a republish since the token was issued.
  if (hold) throw notExecuted(`Not executed: ${hold.reason}`);
  if (!deployment || deployment.id !== lease.lease_deployment_id) throw notExecuted('Not executed: the trigger binding changed after the token was issued');

  const points = await deps.settings.get('CONNECTOR_DISPATCH_RATE_LIMIT_PER_MINUTE');
  await assertWithinLimits(deps.rateLimiter, [{ key: `connector-dispatch:binding:${binding!.id}`, limit: perMinute(points) }], 'Too many dispatches; retry later')
    .catch((error: unknown) => {
      // The connectors family's codes are lower case; Retry-After stays.
      if (error instanceof AppError && error.status === 429) throw new AppError(429, 'rate_limited', error.message, {}, error.headers);
      throw error;
    });

  const event = await db.selectFrom('connector_events').selectAll().where('id', '=', lease.event_id).executeTakeFirstOrThrow();
  const plan = planStart(deps, 'queue');
  const admitted = await db.transaction().execute(async (trx): Promise<AdmittedRun> => {
    // The one-time gate: of two requests with this token, one updates the row and the other finds nothing.
    const gate = await trx.updateTable('connector_dispatches').set({ status: 'dispatched', updated_at: sql<Date>`now()` })
      .where('id', '=', lease.id).where('lease_token_hash', '=', hash).where('status', '=', 'pending')
      .where(sql<boolean>`lease_expires_at > now()`).executeTakeFirst();
    if (gate.numUpdatedRows === 0n) throw dispatchNotFound();
    const run = await admitRun({ db: trx, settings: deps.settings }, {
      target: { deployment },
      caller: {
        kind: 'connector', bindingId: binding!.id, connectionId: binding!.connection_id, service: binding!.service,
        trigger: binding!.trigger, teamId: deployment.team_id, userId: binding!.connection_owner,
      },
      inputs: { ...mailOf(event) },
    }, { recordStart: { taskQueue: taskQueueName('appRuns', deps.taskQueueSuffix), graceSeconds: plan.graceSeconds } });
    await trx.updateTable('connector_dispatches').set({ run_id: run.runId, last_outcome: 'dispatched' }).where('id', '=', lease.id).execute();
    return run;
  }).catch(async (error: unknown) => {
    // The app does not take this mail (its inputs or limits refuse it): it never will, so it is dropped.
    if (error instanceof AppError && error.status === 400) {
      await noteDispatchOutcome(db, lease.id, `inputs_refused: ${error.message}`, true);
      throw dispatchNotFound();
    }
    throw error;
  });
  // Recorded with the run: when Temporal cannot take it now, the outbox dispatcher starts it later.
  if (plan.tryNow && admitted.workflowStart) await startRecordedWorkflow(deps, admitted.workflowStart, 'queue');
  return { runId: admitted.runId };
}
