import { requireProject, teamLevel, type AccessCaller } from '../access/service.js';
import { ADMIN_REQUIRED } from '../documents/service.js';
import { compareVersions, formatVersion, nextMinorVersion, parseVersion, versionOfRow } from '../documents/versions.js';
import type { Database } from '../db/client.js';
import { isUniqueViolation } from '../db/errors.js';
import { AppError } from '../errors.js';
import { isUuid, newId } from '../ids.js';
import { effectiveReleaseConfig, releaseConfigSchema, type EffectiveReleaseConfig, type ReleaseConfig } from './config.js';
import * as repo from './repository.js';
import { endpointLabel, releaseEndpointsSchema, type ReleaseEndpoint } from './router.js';

// Release management (docs/releases.md): project members read, project administrators write;
// the access rules are the editor API's (an API key acts only in its own team).

export interface ReleaseView {
  id: string; projectId: string; alias: string; gatewayPath: string;
  /** As stored. */
  config: unknown;
  /** What the gateway applies: fail-closed auth, the global rate limit when the stored one is invalid. */
  effectiveConfig: EffectiveReleaseConfig;
  anonymousApiKeyId: string | null;
  /** Published versions, newest first. */
  versions: string[];
  createdAt: string; updatedAt: string;
}
export interface ReleaseVersionView { id: string; releaseId: string; version: string; endpoints: ReleaseEndpoint[]; createdAt: string }

/** Lower-case letters, digits and inner hyphens: it is a URL path segment. */
export const ALIAS_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

const releaseNotFound = () => new AppError(404, 'Release not found', 'Release not found');

export const gatewayPathOf = (alias: string) => `/api/released-app/r/${alias}`;

function toReleaseView(row: repo.ReleaseRow, versions: repo.ReleaseVersionRow[]): ReleaseView {
  return {
    id: row.id, projectId: row.project_id, alias: row.alias, gatewayPath: gatewayPathOf(row.alias),
    config: row.config, effectiveConfig: effectiveReleaseConfig(row.config), anonymousApiKeyId: row.anonymous_api_key_id,
    versions: versions.map((v) => formatVersion(versionOfRow(v))),
    createdAt: row.created_at.toISOString(), updatedAt: row.updated_at.toISOString(),
  };
}

const toVersionView = (row: repo.ReleaseVersionRow): ReleaseVersionView => ({
  id: row.id, releaseId: row.release_id, version: formatVersion(versionOfRow(row)),
  endpoints: row.endpoints as ReleaseEndpoint[], createdAt: row.created_at.toISOString(),
});

const authorOf = (caller: AccessCaller) => (caller.kind === 'operator' ? null : caller.userId);

/** A release the caller may see, with its access; one it cannot see answers exactly like a missing one. */
async function requireRelease(db: Database, caller: AccessCaller, releaseId: string, needs: 'member' | 'admin') {
  const release = isUuid(releaseId) ? await repo.findActiveRelease(db, { id: releaseId }) : undefined;
  if (!release) throw releaseNotFound();
  const access = await teamLevel(db, caller, release.team_id);
  if (access === 'none') throw releaseNotFound();
  if (needs === 'admin' && access !== 'admin') throw new AppError(403, ADMIN_REQUIRED, 'Changing a release needs a project administrator (team owner or admin)');
  return release;
}

export async function createRelease(
  db: Database, caller: AccessCaller,
  input: { projectId: string; alias: string; config?: unknown; anonymousApiKeyId?: string | null },
): Promise<ReleaseView> {
  const project = await requireProject(db, caller, input.projectId);
  if (project.access !== 'admin') {
    throw new AppError(403, ADMIN_REQUIRED, 'Creating a release needs a project administrator (team owner or admin)');
  }
  if (!ALIAS_PATTERN.test(input.alias)) {
    throw new AppError(400, 'invalid_alias', 'alias must be 1-63 lower-case letters, digits or inner hyphens');
  }
  const config = parseConfig(input.config ?? {});
  const anonymousApiKeyId = input.anonymousApiKeyId ?? null;
  if (anonymousApiKeyId && !(isUuid(anonymousApiKeyId) && await repo.findTeamApiKey(db, anonymousApiKeyId, project.team_id))) {
    throw new AppError(400, 'invalid_anonymous_api_key', 'anonymousApiKeyId must name a live API key of the project\'s team');
  }
  try {
    const row = await repo.insertRelease(db, {
      id: newId(), project_id: project.id, team_id: project.team_id, alias: input.alias, config: JSON.stringify(config),
      anonymous_api_key_id: anonymousApiKeyId, created_by: authorOf(caller),
    });
    return toReleaseView(row, []);
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError(409, 'alias_taken', `The alias '${input.alias}' is already taken`);
    throw error;
  }
}

function parseConfig(input: unknown): ReleaseConfig {
  const parsed = releaseConfigSchema.strict().safeParse(input);
  if (!parsed.success) {
    const details = parsed.error.issues.map((i) => ({ field: ['config', ...i.path].join('.'), message: i.message }));
    throw new AppError(400, 'invalid_config', `${details[0]!.field}: ${details[0]!.message}`, { details });
  }
  return parsed.data;
}

export async function listReleases(db: Database, caller: AccessCaller, projectId: string): Promise<ReleaseView[]> {
  const project = await requireProject(db, caller, projectId);
  const rows = await repo.listProjectReleases(db, project.id);
  return Promise.all(rows.map(async (row) => toReleaseView(row, await repo.listVersions(db, row.id))));
}

export async function getRelease(db: Database, caller: AccessCaller, releaseId: string): Promise<{ release: ReleaseView; versions: ReleaseVersionView[] }> {
  const row = await requireRelease(db, caller, releaseId, 'member');
  const versions = await repo.listVersions(db, row.id);
  return { release: toReleaseView(row, versions), versions: versions.map(toVersionView) };
}

/** The endpoints as stored, or 400 `invalid_endpoints` naming each problem (index and field). */
function parseEndpoints(input: unknown): ReleaseEndpoint[] {
  const parsed = releaseEndpointsSchema.safeParse(input);
  if (!parsed.success) {
    const details = parsed.error.issues.map((i) => ({ field: ['endpoints', ...i.path].join('.'), message: i.message }));
    throw new AppError(400, 'invalid_endpoints', `${details[0]!.field}: ${details[0]!.message}`, { details });
  }
  return parsed.data;
}

/** Every endpoint's deployment or document must be a live one of the release's own project. */
async function assertTargetsInProject(db: Database, projectId: string, endpoints: ReleaseEndpoint[]): Promise<void> {
  const live = await repo.liveTargetsInProject(db, projectId, {
    deploymentIds: endpoints.flatMap((e) => (e.deploymentId ? [e.deploymentId] : [])),
    documentIds: endpoints.flatMap((e) => (e.documentId ? [e.documentId] : [])),
  });
  const details = endpoints.flatMap((e, index) => {
    if (e.deploymentId && !live.deploymentIds.has(e.deploymentId)) return [{ field: `endpoints.${index}.deploymentId`, message: `${endpointLabel(e)}: no such deployment in this release's project` }];
    if (e.documentId && !live.documentIds.has(e.documentId)) return [{ field: `endpoints.${index}.documentId`, message: `${endpointLabel(e)}: no such document in this release's project` }];
    return [];
  });
  if (details.length > 0) throw new AppError(400, 'invalid_endpoints', `${details[0]!.field}: ${details[0]!.message}`, { details });
}

/**
 * Publishes an immutable version of the release's router tree. `version` defaults to the next
 * minor after the highest published (`1.0`, `1.1`, …), as for deployments.
 */
export async function publishReleaseVersion(
  db: Database, caller: AccessCaller, releaseId: string, input: { version?: string; endpoints: unknown },
): Promise<ReleaseVersionView> {
  const requested = input.version === undefined ? null : parseVersion(input.version);
  if (input.version !== undefined && !requested) {
    throw new AppError(400, 'invalid_version', `version '${input.version}' must be MAJOR.MINOR, for example 1.0`);
  }
  const release = await requireRelease(db, caller, releaseId, 'admin');
  const endpoints = parseEndpoints(input.endpoints);
  await assertTargetsInProject(db, release.project_id, endpoints);
  const versionExists = (v: string) => new AppError(409, 'version_exists', `Version ${v} of this release is already published`);
  try {
    const row = await db.transaction().execute(async (trx) => {
      const locked = await repo.findActiveRelease(trx, { id: release.id }, { forUpdate: true });
      if (!locked) throw releaseNotFound();
      const versions = (await repo.listVersions(trx, release.id)).map(versionOfRow);
      if (requested && versions.some((v) => compareVersions(v, requested) === 0)) throw versionExists(input.version!);
      const version = requested ?? nextMinorVersion(versions);
      return repo.insertVersion(trx, {
        id: newId(), release_id: release.id, version_major: version.major, version_minor: version.minor,
        endpoints: JSON.stringify(endpoints), created_by: authorOf(caller),
      });
    });
    return toVersionView(row);
  } catch (error) {
    if (isUniqueViolation(error)) throw versionExists(input.version ?? 'the next version');
    throw error;
  }
}
