import { deploymentNotFound, findRunDeployment } from '../documents/deployments.js';
import { findLiveRunDeployment, type DeploymentRow } from '../documents/deployments-repository.js';
import { parseVersionRequest, resolveDeploymentVersion } from '../documents/versions.js';
import type { PrincipalOf } from '../credentials/principal.js';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { effectiveReleaseConfig, type EffectiveReleaseConfig } from './config.js';
import * as repo from './repository.js';
import { endpointLabel, matchEndpoint, type ReleaseEndpoint } from './router.js';

// What the gateway looks up (spec §4.1 "Matching"): alias → release, version, endpoint, deployment.

export interface MatchedCall {
  release: repo.ReleaseRow;
  config: EffectiveReleaseConfig;
  endpoint: ReleaseEndpoint;
  /** The endpoint's `:params`, as requested. */
  params: Record<string, string>;
}

/**
 * Steps 1–3: the release by alias, the version (`1.0` exact, `^1.0` newest of major 1, `latest`
 * newest; anything else matches nothing), then the endpoint by method and path.
 */
export async function matchGatewayCall(db: Database, call: { alias: string; version: string; method: string; path: string }): Promise<MatchedCall> {
  const release = await repo.findActiveRelease(db, { alias: call.alias });
  if (!release) throw new AppError(404, `Release alias '${call.alias}' not found`);
  const noVersion = () => new AppError(404, `No published version matching '${call.version}' found`);
  // A malformed version is a path that matches nothing, not a bad request.
  if (!parseVersionRequest(call.version)) throw noVersion();
  const version = resolveDeploymentVersion(await repo.listVersions(db, release.id), call.version);
  if (!version) throw noVersion();
  const matched = matchEndpoint(version.endpoints as ReleaseEndpoint[], call.method, call.path);
  if (!matched) throw new AppError(404, `No endpoint matching ${call.method} ${call.path}`);
  return { release, config: effectiveReleaseConfig(release.config), ...matched };
}

/**
 * Step 4's target: the endpoint's deployment, or the newest deployment of its document. An
 * endpoint with neither is 400; a target deleted since publishing is 404 like any missing deployment.
 */
export async function endpointDeployment(db: Database, endpoint: ReleaseEndpoint): Promise<DeploymentRow> {
  if (endpoint.deploymentId) {
    const deployment = await findLiveRunDeployment(db, endpoint.deploymentId);
    if (!deployment) throw deploymentNotFound();
    return deployment;
  }
  if (endpoint.documentId) return findRunDeployment(db, { documentId: endpoint.documentId }, undefined);
  throw new AppError(400, `Endpoint '${endpointLabel(endpoint)}' has no deployment configured`);
}

/**
 * The release's configured key as the paying caller of an anonymous call, or null when it has
 * none (or the key has been deleted or has expired): then nobody pays and the call needs credentials.
 */
export async function anonymousPayer(db: Database, release: repo.ReleaseRow): Promise<PrincipalOf<'api-key'> | null> {
  if (!release.anonymous_api_key_id) return null;
  const key = await repo.findTeamApiKey(db, release.anonymous_api_key_id, release.team_id);
  if (!key || (key.expires_at && key.expires_at.getTime() <= Date.now())) return null;
  return { kind: 'api-key', apiKeyId: key.id, userId: key.created_by, teamId: key.team_id, limitCredits: key.limit_credits, usageCredits: key.usage_credits };
}
