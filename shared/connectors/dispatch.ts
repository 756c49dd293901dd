import { isTeamMember } from '../access/service.js';
import { admitRun, type AdmittedRun, type RunServiceDeps } from '../app-runs/run-service.js';
import { randomBase64Url, sha256Hex } from '../crypto.js';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { assertWithinLimits, perMinute } from '../rate-limit/limits.js';
import type { RateLimiter } from '../rate-limit/rate-limiter.js';
import { planStart, startRecordedWorkflow, type StartPathDeps } from '../workflow-starts/start-path.js';
import { taskQueueName } from '../../temporal/task-queues.js';
import type { MailInputs } from './mail.js';
import { bindingHold, liveDeploymentOf } from './polling.js';
import { loadBindingState } from './polling-repository.js';
import * as repo from './repository.js';

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
  const row = await repo.findDispatchWithDocument(db, dispatchId);
  if (!row || row.status !== 'pending') return null;
  const deployment = await liveDeploymentOf(db, row.document_id);
  const token = `cdt_${randomBase64Url(32)}`;
  const leased = await repo.leaseDispatch(db, dispatchId, {
    tokenHash: sha256Hex(token), ttlSeconds: DISPATCH_TOKEN_TTL_SECONDS, deploymentId: deployment?.id ?? null,
  });
  return leased ? token : null;
}

/** Records what the dispatcher heard back, for operators (`last_outcome`); a 404 drops the dispatch for good. */
export async function noteDispatchOutcome(db: Database, dispatchId: string, outcome: string, drop: boolean): Promise<void> {
  await repo.noteOutcomeOfPendingDispatch(db, dispatchId, outcome, drop);
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
  const lease = await repo.findDispatchByTokenHash(db, hash);
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

  const event = await repo.findConnectorEvent(db, lease.event_id);
  const plan = planStart(deps, 'queue');
  const admitted = await db.transaction().execute(async (trx): Promise<AdmittedRun> => {
    // The one-time gate: of two requests with this token, one updates the row and the other finds nothing.
    if (!(await repo.consumeDispatchLease(trx, lease.id, hash))) throw dispatchNotFound();
    const run = await admitRun({ db: trx, settings: deps.settings }, {
      target: { deployment },
      caller: {
        kind: 'connector', bindingId: binding!.id, connectionId: binding!.connection_id, service: binding!.service,
        trigger: binding!.trigger, teamId: deployment.team_id, userId: binding!.connection_owner,
      },
      inputs: { ...mailOf(event) },
    }, { recordStart: { taskQueue: taskQueueName('appRuns', deps.taskQueueSuffix), graceSeconds: plan.graceSeconds } });
    await repo.recordDispatchedRun(trx, lease.id, run.runId);
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
