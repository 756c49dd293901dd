import type { Client } from '@temporalio/client';
import { sql } from 'kysely';
import { executePrepared, type Database } from '../db/client.js';
import type { Principal, PrincipalOf } from '../credentials/principal.js';
import { assertWithinCreditLimit } from '../credentials/api-keys.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import { taskQueueName } from '../../temporal/task-queues.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { appendRunEvents, type StoredRunEvent } from './event-log.js';
import { insertChargedRun, type ChargedRunRow } from './run-charge.js';
import { inlineRunPlan } from './run-plan.js';
import type { AppRunInput } from './contracts.js';
import type { ApiSchemaField } from './graph.js';
import { validateRunInputs, withTrigger } from './input-validation.js';
import { resolveDeploymentVersion } from './versions.js';
import { runBaseCostMilli } from '../billing/pricing.js';
import type { SiteSettingsCache } from '../site-settings/cache.js';
import type { DeploymentCache } from './deployment-cache.js';

export const PRIVATE_APP_MESSAGE = 'Permission denied: This is a private app and your credential has no access to it';

/**
 * Who starts a run: a credential of the run endpoints, a webhook trigger whose secret matched, or a
 * grantee team calling through a cross-team binding (`apiKey` when it called with one, so the key's
 * budget applies and its usage counts).
 */
export type CredentialRunCaller = Extract<Principal, { kind: 'api-key' | 'schedule' | 'oauth' }>;
export type CrossTeamRunCaller = {
  kind: 'cross-team'; bindingId: string; teamId: string; userId: string | null;
  apiKey?: Pick<PrincipalOf<'api-key'>, 'apiKeyId' | 'limitCredits' | 'usageCredits'>;
};
/** An agent binding calling through a release: the binding's team pays (docs/decisions.md "Releases"). */
export type AgentRunCaller = { kind: 'agent'; bindingId: string; teamId: string; userId: string };
export type RunCaller = CredentialRunCaller | { kind: 'webhook'; webhookId: string; teamId: string } | CrossTeamRunCaller | AgentRunCaller;

const deploymentColumns = ['id', 'document_id', 'team_id', 'visibility', 'api_schema', 'published_by', 'version_major', 'version_minor'] as const;
export type DeploymentRow = { id: string; document_id: string; team_id: string; visibility: 'private' | 'public'; api_schema: unknown; published_by: string | null; version_major: number; version_minor: number };

/** A live deployment by id with what a run needs, or undefined (schedules and release endpoints name one directly). */
export async function findLiveRunDeployment(db: Database, deploymentId: string): Promise<DeploymentRow | undefined> {
  return db.selectFrom('deployments').select(deploymentColumns)
    .where('id', '=', deploymentId).where('deleted_at', 'is', null).executeTakeFirst() as Promise<DeploymentRow | undefined>;
}

/**
 * The deployment a run request names: by id (or by document id), then by `version` among the
 * document's deployments. The run endpoints pass their process's cache (deployment-cache.ts).
 */
export async function findRunDeployment(
  db: Database, by: { deploymentId?: string; documentId?: string }, version: string | undefined, cache?: DeploymentCache,
): Promise<DeploymentRow> {
  const load = () => {
    // One query: the document's live deployments, found by document id or through the named deployment.
    // Prepared (every run request asks): one statement name per shape of the query.
    const query = db.selectFrom('deployments').select(deploymentColumns)
      .where('document_id', '=', by.documentId ?? ((eb) => eb.selectFrom('deployments as named').select('named.document_id')
        .where('named.id', '=', by.deploymentId!).where('named.deleted_at', 'is', null)))
      .where('deleted_at', 'is', null);
    return executePrepared(db, by.documentId ? 'run_deployments_by_document' : 'run_deployments_by_deployment', query.compile()) as Promise<DeploymentRow[]>;
  };
  const candidates = cache ? await cache.candidates(by, load) : await load();
  // A named deployment must itself be live, even when a `version` then picks another of its document.
  if (by.deploymentId && !candidates.some((d) => d.id === by.deploymentId)) throw new AppError(404, 'Deployment not found');
  // The deployment-id route runs that deployment unless a `version` asks for another one of its document.
  const chosen = by.deploymentId && version === undefined
    ? candidates.find((d) => d.id === by.deploymentId)
    : resolveDeploymentVersion(candidates, version);
  if (!chosen) throw new AppError(404, 'Deployment not found');
  return chosen;
}

/** Permission by deployment visibility (spec §4.1 table). */
export async function assertMayRun(db: Database, deployment: DeploymentRow, caller: CredentialRunCaller): Promise<void> {
  if (caller.kind === 'schedule') {
    if (caller.deploymentId !== deployment.id) throw new AppError(403, 'Deployment ID mismatch');
    return;
  }
  if (deployment.visibility === 'public') return;
  if (caller.kind === 'api-key') {
    if (caller.teamId !== deployment.team_id) throw new AppError(403, PRIVATE_APP_MESSAGE);
    return;
  }
  if (deployment.published_by === caller.userId) return;
  const member = await db.selectFrom('team_members').select('user_id')
    .where('team_id', '=', deployment.team_id).where('user_id', '=', caller.userId).executeTakeFirst();
  if (!member) throw new AppError(403, PRIVATE_APP_MESSAGE);
}

/**
 * Who pays: the key's team for API keys, the trigger's team for webhooks (set on publish), the
 * grantee team through a cross-team binding, the binding's team for agents, the deployment's team
 * for schedule and OAuth callers.
 */
function payingTeam(deployment: DeploymentRow, caller: RunCaller): string {
  return caller.kind === 'schedule' || caller.kind === 'oauth' ? deployment.team_id : caller.teamId;
}

/** The server-set `_trigger` context of a run (spec §4.1 rule 4, §4.2 rule 4). */
function triggerOf(caller: RunCaller): { source: string } & Record<string, unknown> {
  switch (caller.kind) {
    case 'schedule': return { source: 'schedule', schedule_id: caller.scheduleId };
    case 'webhook': return { source: 'webhook', webhook_id: caller.webhookId };
    case 'cross-team': return { source: 'cross-team', binding_id: caller.bindingId };
    default: return { source: 'api' };
  }
}

export interface RunRequest {
  deployment: DeploymentRow; caller: RunCaller; inputs: Record<string, unknown>; trace: boolean; timeoutSeconds: number | null;
  /** `Idempotency-Key` and a hash of what was asked: a repeat within 24 h gets the same run. */
  idempotency?: { key: string; requestHash: string };
}

export interface RecordedRun {
  runId: string; replayed: boolean; documentId: string;
  /** The run's `run_start` as stored, so a stream can send it at once and follow the log after it (absent on a replay). */
  startEvent?: StoredRunEvent;
  /** The inputs as stored, with `_trigger` (absent on a replay). */
  inputs?: Record<string, unknown>;
}

export interface StartedRun extends RecordedRun {
  /** Settles once Temporal has the workflow (or the failure has been recorded as the run's end). */
  started: Promise<void>;
}

/** Where runs are recorded and what they cost (`billing.rules`, docs/billing.md). */
export interface RecordRunDeps { db: Database; settings: Pick<SiteSettingsCache, 'get'> }
export interface StartRunDeps extends RecordRunDeps { temporal: Client; taskQueueSuffix?: string; onStartFailure?: (runId: string, error: Error) => void }

/**
 * Validates, checks credits, records the run and its `run_start` event, then starts `app-run-<id>`.
 * Nothing is written when a check fails.
 */
export async function startRun(deps: StartRunDeps, request: RunRequest): Promise<StartedRun> {
  const { db } = deps;
  const recorded = await recordRun(deps, request);
  if (recorded.replayed) return { ...recorded, started: Promise.resolve() };
  const { runId } = recorded;
  // Not awaited, and begun on the next turn of the event loop: the caller's first streamed byte
  // (run_start) goes out before the client encodes and sends the start. A start that fails ends the
  // run with run_error.
  const started = new Promise((resolve) => setImmediate(resolve)).then(async () => {
    const plan = await inlineRunPlan(db, { deploymentId: request.deployment.id, documentId: recorded.documentId, inputs: recorded.inputs ?? {} });
    const input: AppRunInput = { runId, trace: request.trace, timeoutSeconds: request.timeoutSeconds, ...(plan ? { plan } : {}) };
    // Eager start: where an app-runs worker shares this client's connection (`npm start`), the
    // server hands it the first workflow task in its answer; elsewhere the task goes through the queue.
    await deps.temporal.workflow.start('appRunWorkflow', {
      taskQueue: taskQueueName('appRuns', deps.taskQueueSuffix), workflowId: workflowIds.appRun(runId), args: [input],
      requestEagerStart: true,
    });
  }).then(() => undefined, async (error: unknown) => {
    deps.onStartFailure?.(runId, error as Error);
    await db.updateTable('runs').set({ status: 'failed', error: 'could not start the run', finished_at: sql`now()` as never })
      .where('id', '=', runId).where('status', '=', 'running').execute();
    await appendRunEvents(db, runId, [{ key: 'run_error', event: { type: 'run_error', runId, error: 'The run could not be started', executionStatus: 'failed' } }]);
  }).catch((error: unknown) => deps.onStartFailure?.(runId, error as Error));
  return { ...recorded, started };
}

/**
 * Validates inputs, checks credits, and in one statement charges the paying team and inserts the
 * `runs` row and its `run_start` event (with an Idempotency-Key, in one transaction with the key).
 * The caller starts `appRunWorkflow` for the run (the API with the client, a scheduled run as a
 * child workflow). Nothing is written when a check fails.
 */
export async function recordRun({ db, settings }: RecordRunDeps, request: RunRequest): Promise<RecordedRun> {
  const { deployment, caller } = request;
  // Only the run endpoints' own credentials send Idempotency-Key (and schedules, per attempt).
  const idempotency = request.idempotency && isCredentialCaller(caller) ? { ...request.idempotency, scope: idempotencyScope(caller) } : undefined;
  if (idempotency) {
    const earlier = await findIdempotentRun(db, idempotency);
    if (earlier) return { runId: earlier, replayed: true, documentId: deployment.document_id };
  }
  const problems = validateRunInputs(deployment.api_schema as { inputs: ApiSchemaField[] }, request.inputs);
  if (problems.length > 0) throw new AppError(400, 'Input validation failed', 'Input validation failed', { details: problems });
  const apiKey = caller.kind === 'api-key' ? caller : caller.kind === 'cross-team' ? caller.apiKey : undefined;
  if (apiKey) assertWithinCreditLimit(apiKey);
  const teamId = payingTeam(deployment, caller);
  const runId = newId();
  const inputs = withTrigger(request.inputs, triggerOf(caller), new Date());
  const row: ChargedRunRow = {
    runId, deploymentId: deployment.id, documentId: deployment.document_id, teamId, triggerSource: caller.kind,
    apiKeyId: apiKey?.apiKeyId ?? null, userId: 'userId' in caller ? caller.userId : null, inputs,
    timeoutSeconds: request.timeoutSeconds === null ? null : Math.ceil(request.timeoutSeconds),
  };
  const costMilli = runBaseCostMilli(await settings.get('billing.rules'));
  const record = async (executor: Database): Promise<RecordedRun> => {
    const charged = await insertChargedRun(executor, row, costMilli);
    if (!charged) throw new AppError(402, 'insufficient_credits', 'The team does not have enough credits for this run');
    return { runId, replayed: false, documentId: deployment.document_id, startEvent: charged.startEvent, inputs };
  };
  if (!idempotency) return record(db);
  try {
    // The key is claimed in the run's transaction: a run and its key commit together or not at all.
    return await db.transaction().execute(async (trx) => {
      const recorded = await record(trx);
      const claimed = await trx.insertInto('run_idempotency_keys')
        .values({ scope: idempotency.scope, key: idempotency.key, request_hash: idempotency.requestHash, run_id: runId })
        .onConflict((oc) => oc.columns(['scope', 'key']).doNothing()).executeTakeFirst();
      // Another request with the same key won the race: roll back this run and answer with that one.
      if (claimed.numInsertedOrUpdatedRows === 0n) throw new IdempotentReplay();
      return recorded;
    });
  } catch (error) {
    if (!(error instanceof IdempotentReplay)) throw error;
    const winner = await findIdempotentRun(db, idempotency);
    if (!winner) throw error;
    return { runId: winner, replayed: true, documentId: deployment.document_id };
  }
}

class IdempotentReplay extends Error {}

const isCredentialCaller = (caller: RunCaller): caller is CredentialRunCaller =>
  caller.kind === 'api-key' || caller.kind === 'oauth' || caller.kind === 'schedule';

const IDEMPOTENCY_WINDOW_HOURS = 24;

function idempotencyScope(caller: CredentialRunCaller): string {
  switch (caller.kind) {
    case 'api-key': return `api-key:${caller.apiKeyId}`;
    case 'oauth': return `oauth:${caller.userId}:${caller.clientId}`;
    case 'schedule': return `schedule:${caller.scheduleId}`;
  }
}

/**
 * The run an earlier request with this key started, within the window; 409 when the key comes back
 * with a different request. An expired key is released for reuse.
 */
async function findIdempotentRun(db: Database, k: { scope: string; key: string; requestHash: string }): Promise<string | null> {
  const row = await db.selectFrom('run_idempotency_keys').select(['run_id', 'request_hash', 'created_at'])
    .where('scope', '=', k.scope).where('key', '=', k.key).executeTakeFirst();
  if (!row) return null;
  if (row.created_at.getTime() < Date.now() - IDEMPOTENCY_WINDOW_HOURS * 3_600_000) {
    await db.deleteFrom('run_idempotency_keys').where('scope', '=', k.scope).where('key', '=', k.key).where('run_id', '=', row.run_id).execute();
    return null;
  }
  if (row.request_hash !== k.requestHash) {
    throw new AppError(409, 'idempotency_key_reused', 'This Idempotency-Key was used for a different request in the last 24 hours');
  }
  return row.run_id;
}
