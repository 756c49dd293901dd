import type { AccessCaller } from '../access/service.js';
import { ADMIN_REQUIRED, requireVisibleDocument } from '../documents/service.js';
import type { DeploymentRow } from '../documents/deployments-repository.js';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { isUuid } from '../ids.js';
import type { RateLimiter } from '../rate-limit/rate-limiter.js';
import * as repo from './repository.js';
import { generateWebhookSecret, webhookSecretMatches } from './secrets.js';

/** Spec §2.3. Never the secret or its hash; every field is present, null where there is nothing yet. */
export interface WebhookTriggerView {
  exists: boolean; id: string | null; enabled: boolean; path: string | null; hasSecret: boolean;
  secretPrefix: string | null; deploymentId: string | null; lastTriggeredAt: string | null;
}

/** Relative: clients prepend their API base (spec §2.3). */
export const webhookPath = (webhookId: string) => `/api/webhook-triggers/${webhookId}`;

const NO_TRIGGER: WebhookTriggerView = {
  exists: false, id: null, enabled: false, path: null, hasSecret: false, secretPrefix: null, deploymentId: null, lastTriggeredAt: null,
};

export async function viewTriggerOfDocument(db: Database, caller: AccessCaller, documentId: string): Promise<WebhookTriggerView> {
  const { document } = await requireVisibleDocument(db, caller, documentId);
  const trigger = await repo.findTriggerOfDocument(db, document.id);
  if (!trigger) return NO_TRIGGER;
  return {
    exists: true, id: trigger.id, enabled: trigger.enabled, path: webhookPath(trigger.id), hasSecret: trigger.secret_hash !== null,
    secretPrefix: trigger.secret_prefix, deploymentId: trigger.deployment_id, lastTriggeredAt: trigger.last_triggered_at?.toISOString() ?? null,
  };
}

/**
 * Generates (first time) or replaces the trigger's secret; the old one stops working at once.
 * Project administrators and the document's owner may; `enabled` is left as it is, so rotating
 * never undoes an operator's switch-off.
 */
export async function rotateTriggerSecret(db: Database, caller: AccessCaller, documentId: string): Promise<{ id: string; path: string; secret: string }> {
  const { document, access } = await requireVisibleDocument(db, caller, documentId);
  const isDocumentOwner = caller.kind !== 'operator' && document.created_by === caller.userId;
  if (access !== 'admin' && !isDocumentOwner) {
    throw new AppError(403, ADMIN_REQUIRED, 'Rotating the webhook secret needs a project administrator (team owner or admin) or the document owner');
  }
  const trigger = await repo.findTriggerOfDocument(db, document.id);
  if (!trigger?.deployment_id) {
    throw new AppError(400, 'webhook_trigger_missing', 'This document has no webhook trigger: publish it first');
  }
  const { secret, hash, prefix } = generateWebhookSecret();
  await repo.updateTriggerSecret(db, trigger.id, { hash, prefix });
  return { id: trigger.id, path: webhookPath(trigger.id), secret };
}

// One body for every refusal of §4.2 rule 3, so a caller cannot tell an unknown id from a wrong secret.
export const webhookNotFound = () => new AppError(404, 'webhook_not_found', 'Webhook not found');

// Never a real trigger id (uuid v4 ids have version nibble 4): a malformed id still runs the same query.
const NEVER_A_TRIGGER_ID = '00000000-0000-0000-0000-000000000000';

export interface AcceptedTriggerCall {
  webhookId: string;
  deployment: DeploymentRow;
  /** The team that pays, or null when the trigger has none (team unset or deleted): 403, republish. */
  billableTeamId: string | null;
}

/**
 * The §4.2 rule 3 gate. The same query and the same hash-and-compare run whatever the request
 * holds, and every refusal is the same 404, so neither the answer nor its timing tells whether an
 * id exists.
 */
export async function acceptTriggerCall(db: Database, webhookId: string, presentedSecret: string | undefined): Promise<AcceptedTriggerCall> {
  const row = await repo.findTriggerForCall(db, isUuid(webhookId) ? webhookId : NEVER_A_TRIGGER_ID);
  const secretMatches = webhookSecretMatches(presentedSecret, row?.secret_hash);
  if (!row || !secretMatches || !row.enabled || !row.live_document_id || !row.deployment_id) throw webhookNotFound();
  const deployment: DeploymentRow = {
    id: row.deployment_id, document_id: row.document_id!, project_id: row.deployment_project_id!, team_id: row.deployment_team_id!, visibility: row.visibility!,
    api_schema: row.api_schema, published_by: row.published_by, version_major: row.version_major!, version_minor: row.version_minor!, app_name: row.app_name!,
  };
  return { webhookId: row.id, deployment, billableTeamId: row.billable_team_id };
}

/** Counted only for calls whose secret matched, so strangers can neither spend nor probe a webhook's budget. */
export async function assertWithinRateLimit(limiter: RateLimiter, webhookId: string, perMinute: number, setHeaders: (headers: Record<string, string>) => void): Promise<void> {
  const decision = await limiter.consume(`webhook:${webhookId}`, { points: perMinute, windowSeconds: 60 });
  setHeaders({
    'x-ratelimit-limit': String(perMinute), 'x-ratelimit-remaining': String(decision.remaining), 'x-ratelimit-reset': String(decision.retryAfterSeconds),
    ...(decision.allowed ? {} : { 'retry-after': String(decision.retryAfterSeconds) }),
  });
  if (!decision.allowed) {
    throw new AppError(429, 'rate_limited', `Too many calls to this webhook: the limit is ${perMinute} per minute; retry after ${decision.retryAfterSeconds} seconds`);
  }
}

export function requireBillableTeam(call: AcceptedTriggerCall): string {
  if (!call.billableTeamId) {
    throw new AppError(403, 'webhook_team_missing', 'This webhook has no team to charge; republish the document to bind the webhook to its team');
  }
  return call.billableTeamId;
}

/** How often one process writes a trigger's `last_triggered_at` at most: the column is kept to the second. */
const MARK_INTERVAL_MS = 1000;
/** Triggers remembered at most; forgetting one only costs one more (usually empty) UPDATE. */
const MAX_REMEMBERED_TRIGGERS = 10_000;

/**
 * `last_triggered_at` for accepted calls, without a round trip per call. The row is written at
 * most once a second anyway (repository.markTriggered), so under load nearly every call's UPDATE
 * matched nothing and only cost a statement on the run path; this remembers, per process, when it
 * last sent one for each trigger and sends the next only a second later. Other processes still
 * write their own (the row's own condition keeps it once a second overall).
 */
export class TriggerMarks {
  private readonly sentAt = new Map<string, number>();

  constructor(private readonly write: (triggerId: string) => Promise<void>, private readonly now: () => number = Date.now) {}

  async mark(triggerId: string): Promise<void> {
    const now = this.now();
    const last = this.sentAt.get(triggerId);
    if (last !== undefined && now - last < MARK_INTERVAL_MS) return;
    if (this.sentAt.size >= MAX_REMEMBERED_TRIGGERS) this.sentAt.clear();
    // Noted before the write, so concurrent calls of the same second do not each send one.
    this.sentAt.set(triggerId, now);
    try {
      await this.write(triggerId);
    } catch (error) {
      this.sentAt.delete(triggerId); // not written: the next call tries again
      throw error;
    }
  }
}

export const triggerMarksOf = (db: Database) => new TriggerMarks((triggerId) => repo.markTriggered(db, triggerId));
