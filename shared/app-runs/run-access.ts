import { isTeamMember, mayReadRun, type RunReader } from '../access/service.js';
import type { Principal, PrincipalOf } from '../credentials/principal.js';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { isUuid } from '../ids.js';
import type { DeploymentRow } from '../documents/deployments-repository.js';
import { findRunToFollow } from './runs-repository.js';

export const PRIVATE_APP_MESSAGE = 'Permission denied: This is a private app and your credential has no access to it';

/** A credential of the run endpoints (spec §4.1). */
export type CredentialRunCaller = Extract<Principal, { kind: 'api-key' | 'schedule' | 'oauth' }>;
/** A grantee team calling through a cross-team binding (`apiKey` when it called with one, so the key's budget applies). */
export type CrossTeamRunCaller = {
  kind: 'cross-team'; bindingId: string; teamId: string; userId: string | null;
  apiKey?: Pick<PrincipalOf<'api-key'>, 'apiKeyId' | 'limitCredits' | 'usageCredits'>;
};
/** An agent binding calling through a release: the binding's team pays (docs/decisions.md "Releases"). */
export type AgentRunCaller = { kind: 'agent'; bindingId: string; teamId: string; userId: string };
/** A webhook trigger whose secret matched: the trigger's team pays. */
export type WebhookRunCaller = { kind: 'webhook'; webhookId: string; teamId: string };
/**
 * A connector's dispatch of one mail (docs/connectors.md "Dispatch"): the binding was checked
 * against its connection's owner and the document's team; the document's team pays.
 */
export type ConnectorRunCaller = {
  kind: 'connector'; bindingId: string; connectionId: string; service: string; trigger: string; teamId: string; userId: string;
};
/** Nobody, on a release endpoint that needs no credential: the release's own key pays (spec §4.1 rule 5), if it has one. */
export type AnonymousRunCaller = { kind: 'anonymous'; payer: PrincipalOf<'api-key'> | null };

/**
 * A retry of an earlier run (docs/long-runs.md "Retrying a run") by someone who may follow it: the
 * original's team pays (through `apiKey`'s budget when a key asked), and the original's trigger
 * context and source are kept, with `retry_of` added to `_trigger`.
 */
export type RetryRunCaller = {
  kind: 'retry'; retryOf: string; teamId: string; userId: string | null; triggerSource: string;
  trigger: { source: string } & Record<string, unknown>;
  apiKey?: Pick<PrincipalOf<'api-key'>, 'apiKeyId' | 'limitCredits' | 'usageCredits'>;
};

/** Who starts a run. Each kind has one access rule, one paying team and one `_trigger` (below). */
export type RunCaller = CredentialRunCaller | WebhookRunCaller | ConnectorRunCaller | CrossTeamRunCaller | AgentRunCaller | AnonymousRunCaller | RetryRunCaller;

/**
 * May this caller run this deployment (spec §4.1 visibility table, release rule 4)? Public apps run
 * for everyone; a private app for its team's keys and agents, its publisher and team members, a
 * schedule token of exactly this deployment, a webhook trigger (bound to it on publish), a connector binding of its document and a
 * cross-team binding (the grant is the point of the binding). An anonymous caller runs only public
 * apps, and only when the release has a key to pay with (401 otherwise, spec §4.1 rule 5).
 */
export async function assertMayRun(db: Database, deployment: DeploymentRow, caller: RunCaller): Promise<void> {
  if (caller.kind === 'schedule') {
    if (caller.deploymentId !== deployment.id) throw new AppError(403, 'Deployment ID mismatch');
    return;
  }
  if (caller.kind === 'anonymous') {
    if (deployment.visibility !== 'public') throw new AppError(403, PRIVATE_APP_MESSAGE);
    if (!caller.payer) throw new AppError(401, 'Unauthorized');
    return;
  }
  if (deployment.visibility === 'public') return;
  switch (caller.kind) {
    // The retry route checked that the caller may follow the original run of this deployment.
    case 'retry':
    case 'webhook':
    case 'connector':
    case 'cross-team':
      return;
    case 'api-key':
    case 'agent':
      if (caller.teamId !== deployment.team_id) throw new AppError(403, PRIVATE_APP_MESSAGE);
      return;
    case 'oauth':
      if (deployment.published_by === caller.userId) return;
      if (!(await isTeamMember(db, deployment.team_id, caller.userId))) throw new AppError(403, PRIVATE_APP_MESSAGE);
  }
}

/** A run the caller may follow (its events, cancelling it); one it may not answers exactly like a missing one. */
export async function requireVisibleRun(db: Database, runId: string, caller: RunReader) {
  const run = isUuid(runId) ? await findRunToFollow(db, runId) : undefined;
  if (run && await mayReadRun(db, run, caller)) return run;
  throw new AppError(404, 'Run not found');
}

/**
 * Who pays: the key's team for API keys, the trigger's team for webhooks (set on publish), the
 * grantee team through a cross-team binding, the binding's team for agents, the release key's team
 * for anonymous calls, the deployment's team for schedule and OAuth callers.
 */
export function payingTeamOf(deployment: DeploymentRow, caller: RunCaller): string {
  switch (caller.kind) {
    case 'schedule': case 'oauth': return deployment.team_id;
    case 'anonymous': return caller.payer!.teamId;
    default: return caller.teamId;
  }
}

/** The API key whose budget the run spends and whose usage it counts, if any. */
export function budgetKeyOf(caller: RunCaller): Pick<PrincipalOf<'api-key'>, 'apiKeyId' | 'limitCredits' | 'usageCredits'> | undefined {
  switch (caller.kind) {
    case 'api-key': return caller;
    case 'anonymous': return caller.payer ?? undefined;
    case 'cross-team': return caller.apiKey;
    case 'retry': return caller.apiKey;
    default: return undefined;
  }
}

/** `runs.trigger_source`: the credential kind; an anonymous release call is paid (and recorded) as its key. */
export const triggerSourceOf = (caller: RunCaller): string =>
  (caller.kind === 'anonymous' ? 'api-key' : caller.kind === 'retry' ? caller.triggerSource : caller.kind);

/** The server-set `_trigger` context of a run (spec §4.1 rule 4, §4.2 rule 4). */
export function triggerOf(caller: RunCaller): { source: string } & Record<string, unknown> {
  switch (caller.kind) {
    case 'schedule': return { source: 'schedule', schedule_id: caller.scheduleId };
    case 'webhook': return { source: 'webhook', webhook_id: caller.webhookId };
    case 'connector': return { source: 'connector', service: caller.service, trigger: caller.trigger, connection_id: caller.connectionId };
    case 'cross-team': return { source: 'cross-team', binding_id: caller.bindingId };
    case 'retry': return { ...caller.trigger, retry_of: caller.retryOf };
    default: return { source: 'api' };
  }
}
