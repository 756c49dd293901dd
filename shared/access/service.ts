import type { Database } from '../db/client.js';
import type { TeamRole } from '../db/types.js';
import { AppError } from '../errors.js';
import { isUuid } from '../ids.js';
import * as repo from './repository.js';

// One place answers "may this caller read or administer this team, project, document or run"
// (docs/decisions.md "One access rule"). Every capability asks here first; the rule itself is the
// SQL of migration 0021, which the row-level-security policies call as well.

export type AccessLevel = repo.AccessLevel;

/**
 * Who acts on a team's projects. API callers come from the request principal (an API key acts
 * with its creator's role in its own team only); the operator CLI has no principal and passes
 * every access check.
 */
export type AccessCaller =
  | { kind: 'jwt'; userId: string }
  | { kind: 'api-key'; userId: string; teamId: string }
  | { kind: 'operator' };

/** A credential that follows a run (a request principal: every kind of `Principal` fits). */
export type RunReader =
  | { kind: 'api-key' | 'schedule'; teamId: string }
  | { kind: 'jwt' | 'oauth'; userId: string }
  | { kind: 'agent' };

export const teamNotFound = () => new AppError(404, 'Team not found');
export const projectNotFound = () => new AppError(404, 'Project not found', 'Project not found');
export const documentNotFound = () => new AppError(404, 'Document not found', 'Document not found');

const userOf = (caller: AccessCaller) => (caller.kind === 'operator' ? null : caller.userId);
const keyTeamOf = (caller: AccessCaller) => (caller.kind === 'api-key' ? caller.teamId : null);

/** The user's role in a live team; undefined when they are not a member, the team is deleted, or `teamId` is not a uuid. */
/** Platform administrators (`user set-admin`) review OAuth apps, manage prices and anyone's public objects. */
export const isPlatformAdmin = (db: Database, userId: string): Promise<boolean> => repo.findIsPlatformAdmin(db, userId);

export async function teamRole(db: Database, teamId: string, userId: string): Promise<TeamRole | undefined> {
  if (!isUuid(teamId)) return undefined;
  return (await repo.findTeamRole(db, teamId, userId)) ?? undefined;
}

/** Whether the user is a member (any role) of the team, which is not deleted. */
export async function isTeamMember(db: Database, teamId: string, userId: string): Promise<boolean> {
  return (await teamRole(db, teamId, userId)) !== undefined;
}

/**
 * The caller's role in an active team. A team the caller is not in answers exactly like a missing
 * one (404); a member without one of `roles` gets 403.
 */
export async function requireTeamRole(db: Database, teamId: string, userId: string, roles: readonly TeamRole[], action: string): Promise<TeamRole> {
  const role = await teamRole(db, teamId, userId);
  if (!role) throw teamNotFound();
  if (!roles.includes(role)) throw new AppError(403, 'Forbidden', `Only the team ${roles.join(' or ')} can ${action}`);
  return role;
}

/** The caller's rights in a team's projects: 'admin' (owner or admin), 'member', or 'none'. */
export async function teamLevel(db: Database, caller: AccessCaller, teamId: string): Promise<AccessLevel> {
  if (caller.kind === 'operator') return 'admin';
  if (!isUuid(teamId)) return 'none';
  return repo.findTeamLevel(db, teamId, userOf(caller), keyTeamOf(caller));
}

/** A live project's team and the caller's level in it; undefined when the project (or its team) is missing or deleted. */
export async function projectAccess(db: Database, caller: AccessCaller, projectId: string): Promise<{ id: string; team_id: string; access: AccessLevel } | undefined> {
  if (!isUuid(projectId)) return undefined;
  const { team_id, level } = await repo.findProjectLevel(db, projectId, userOf(caller), keyTeamOf(caller));
  if (!team_id) return undefined;
  return { id: projectId, team_id, access: caller.kind === 'operator' ? 'admin' : level };
}

/** A project the caller may use, with its access; one it cannot see (or a deleted one) answers exactly like a missing one. */
export async function requireProject(db: Database, caller: AccessCaller, projectId: string): Promise<{ id: string; team_id: string; access: 'member' | 'admin' }> {
  const project = await projectAccess(db, caller, projectId);
  if (!project || project.access === 'none') throw projectNotFound();
  return { ...project, access: project.access };
}

/**
 * A live document's team and the caller's level in it; one the caller cannot see answers exactly
 * like a missing (or deleted) one, 404 'Document not found'.
 */
export async function requireDocumentAccess(db: Database, caller: AccessCaller, documentId: string): Promise<{ team_id: string; access: 'member' | 'admin' }> {
  if (!isUuid(documentId)) throw documentNotFound();
  const { team_id, level } = await repo.findDocumentLevel(db, documentId, userOf(caller), keyTeamOf(caller));
  if (!team_id) throw documentNotFound();
  const access = caller.kind === 'operator' ? 'admin' : level;
  if (access === 'none') throw documentNotFound();
  return { team_id, access };
}

/**
 * May this credential follow (read, cancel) a run? Its own team's API keys and schedules, the
 * OAuth user who started it, and members of its team; nobody else.
 */
export async function mayReadRun(db: Database, run: { team_id: string; user_id: string | null }, caller: RunReader): Promise<boolean> {
  switch (caller.kind) {
    case 'api-key': case 'schedule': return caller.teamId === run.team_id;
    case 'oauth': return caller.userId === run.user_id;
    case 'jwt': return isTeamMember(db, run.team_id, caller.userId);
    default: return false;
  }
}
