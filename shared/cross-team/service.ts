import { requireTeamRole } from '../access/service.js';
import { memberTeamIds } from '../access/repository.js';
import { deploymentNotFound, findRunDeployment } from '../documents/deployments.js';
import { type DeploymentRow } from '../documents/deployments-repository.js';
import type { CrossTeamRunCaller } from '../app-runs/run-access.js';
import { resolveDeploymentVersion } from '../documents/versions.js';
import type { PrincipalOf } from '../credentials/principal.js';
import type { Database } from '../db/client.js';
import { isUniqueViolation } from '../db/errors.js';
import { AppError } from '../errors.js';
import { isUuid, newId } from '../ids.js';
import * as repo from './repository.js';

// Cross-team bindings (docs/cross-team.md): an owner team lets a grantee team run one released app.

/** The credentials the cross-team endpoints accept (access row `crossTeam`). */
export type CrossTeamPrincipal = PrincipalOf<'api-key' | 'schedule' | 'oauth'>;

export interface BindingView {
  id: string; name: string; ownerTeamId: string; ownerTeamName: string; granteeTeamId: string; granteeTeamName: string;
  documentId: string; documentName: string; deploymentId: string | null; pinned: boolean; createdAt: string;
}

type LiveBinding = Awaited<ReturnType<typeof repo.listLiveBindings>>[number];
const toView = (b: LiveBinding): BindingView => ({
  id: b.id, name: b.name, ownerTeamId: b.owner_team_id, ownerTeamName: b.owner_team_name,
  granteeTeamId: b.grantee_team_id, granteeTeamName: b.grantee_team_name, documentId: b.document_id, documentName: b.document_name,
  deploymentId: b.deployment_id, pinned: b.pinned_deployment_id !== null, createdAt: b.created_at.toISOString(),
});

const MANAGERS = ['owner', 'admin'] as const;
// One body for every refusal of a call, so a stranger cannot tell a revoked binding from none.
const bindingNotFound = () => new AppError(404, 'Binding not found');

export interface GrantInput { documentId: string; granteeTeamId: string; name?: string | undefined; deploymentId?: string | undefined }

/** Owner or admin of the owning team grants `granteeTeamId` the right to run one of the team's documents. */
export async function grantBinding(db: Database, userId: string, ownerTeamId: string, input: GrantInput): Promise<BindingView> {
  await requireTeamRole(db, ownerTeamId, userId, MANAGERS, 'grant cross-team bindings');
  if (input.granteeTeamId === ownerTeamId) throw new AppError(400, 'invalid_grantee', 'A team cannot grant a binding to itself');
  // Another team's document answers like a missing one: the grant must not reveal it exists.
  const document = await repo.findDocumentWithTeam(db, input.documentId);
  if (!document || document.team_id !== ownerTeamId) throw new AppError(404, 'Document not found');
  if (!await repo.teamExists(db, input.granteeTeamId)) throw new AppError(404, 'grantee_team_not_found', 'The grantee team does not exist');
  if (input.deploymentId && !await repo.findLiveDeployment(db, input.deploymentId, document.id)) {
    throw new AppError(404, 'Deployment not found', 'The pinned deployment is not a live deployment of this document');
  }
  const id = newId();
  try {
    await repo.insertBinding(db, {
      id, owner_team_id: ownerTeamId, grantee_team_id: input.granteeTeamId, document_id: document.id,
      deployment_id: input.deploymentId ?? null, name: input.name ?? document.name, created_by: userId,
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError(409, 'binding_exists', 'The grantee team already has a live binding to this document (and pin)');
    throw error;
  }
  return toView((await repo.listLiveBindings(db, { ownerTeamId })).find((b) => b.id === id)!);
}

export async function listGrantedBindings(db: Database, userId: string, ownerTeamId: string): Promise<BindingView[]> {
  await requireTeamRole(db, ownerTeamId, userId, MANAGERS, 'list cross-team bindings');
  return (await repo.listLiveBindings(db, { ownerTeamId })).map(toView);
}

/** Idempotent: revoking a revoked binding succeeds again. Calls through it stop at once. */
export async function revokeBinding(db: Database, userId: string, ownerTeamId: string, bindingId: string): Promise<void> {
  await requireTeamRole(db, ownerTeamId, userId, MANAGERS, 'revoke cross-team bindings');
  if (!await repo.revokeBinding(db, ownerTeamId, bindingId)) throw bindingNotFound();
}

/** The teams a caller acts for: the key's or schedule's team, or every team of an OAuth user. */
async function granteeTeamsOf(db: Database, principal: CrossTeamPrincipal): Promise<string[]> {
  if (principal.kind !== 'oauth') return [principal.teamId];
  return (await memberTeamIds(db, principal.userId).execute()).map((row) => row.team_id);
}

export async function listUsableBindings(db: Database, principal: CrossTeamPrincipal): Promise<BindingView[]> {
  return (await repo.listLiveBindings(db, { granteeTeamIds: await granteeTeamsOf(db, principal) })).map(toView);
}

/**
 * The deployment a proxy call runs and the run caller that pays for it (the grantee team). A pinned
 * binding runs only its pin: a `version` that names another one is 404 like an unknown version.
 */
export async function resolveProxyCall(db: Database, principal: CrossTeamPrincipal, bindingId: string, version: string | undefined): Promise<{ deployment: DeploymentRow; caller: CrossTeamRunCaller }> {
  const binding = isUuid(bindingId)
    ? (await repo.listLiveBindings(db, { granteeTeamIds: await granteeTeamsOf(db, principal), bindingId }))[0]
    : undefined;
  if (!binding) throw bindingNotFound();
  const pinned = binding.pinned_deployment_id;
  const deployment = pinned
    ? await findRunDeployment(db, { deploymentId: pinned }, undefined)
    : await findRunDeployment(db, { documentId: binding.document_id }, version);
  if (pinned && !resolveDeploymentVersion([deployment], version)) throw deploymentNotFound();
  const caller: CrossTeamRunCaller = {
    kind: 'cross-team', bindingId: binding.id, teamId: binding.grantee_team_id,
    userId: principal.kind === 'schedule' ? null : principal.userId,
    ...(principal.kind === 'api-key' ? { apiKey: principal } : {}),
  };
  return { deployment, caller };
}
