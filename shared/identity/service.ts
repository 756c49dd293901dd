import { randomBytes } from 'node:crypto';
import type { Database } from '../db/client.js';
import type { PlanCode, TeamRole } from '../db/types.js';
import { AppError, notFound } from '../errors.js';
import { newId, slugify } from '../ids.js';
import { teamLevel, teamNotFound, type AccessCaller } from '../access/service.js';
import * as repo from './repository.js';

/** Operator CLI `user set-admin`: platform administrators review OAuth apps and manage prices (CONTRACTS.md). */
export async function setPlatformAdmin(db: Database, userId: string, admin: boolean): Promise<{ userId: string; isPlatformAdmin: boolean }> {
  const row = await repo.updatePlatformAdmin(db, userId, admin);
  if (!row) throw notFound(`User ${userId}`);
  return { userId: row.id, isPlatformAdmin: row.is_platform_admin };
}

export async function createUser(db: Database, input: { email: string; name?: string; phone?: string }) {
  if (await repo.findUserByEmail(db, input.email)) {
    throw new AppError(409, 'email_taken', `A user with email ${input.email} already exists`);
  }
  return repo.insertUser(db, { id: newId(), email: input.email, name: input.name ?? null, phone: input.phone ?? null });
}

/** Team and owner membership, all or nothing; the team's empty credit balance comes with it (a trigger, migration 0021). */
/**
 * `withTeam` runs in the same transaction once the team exists: what higher floors attach to a new
 * team (billing's subscription for a paid plan) commits with it or not at all.
 */
export async function createTeam(
  db: Database,
  input: { ownerId: string; name: string; plan?: PlanCode },
  withTeam?: (trx: Database, team: Awaited<ReturnType<typeof repo.insertTeam>>) => Promise<unknown>,
) {
  return db.transaction().execute(async (trx) => {
    if (!(await repo.findUserById(trx, input.ownerId))) throw notFound(`User ${input.ownerId}`);
    const slug = `${slugify(input.name)}-${randomBytes(3).toString('hex')}`;
    const team = await repo.insertTeam(trx, { id: newId(), slug, name: input.name, owner_id: input.ownerId, plan_code: input.plan ?? 'free' });
    await repo.upsertTeamMember(trx, { team_id: team.id, user_id: input.ownerId, role: 'owner' });
    await withTeam?.(trx, team);
    return team;
  });
}

export async function addTeamMember(db: Database, input: { teamId: string; userId: string; role: TeamRole }) {
  return db.transaction().execute(async (trx) => {
    const team = await repo.findActiveTeam(trx, input.teamId);
    if (!team) throw notFound(`Team ${input.teamId}`);
    if (!(await repo.findUserById(trx, input.userId))) throw notFound(`User ${input.userId}`);
    if (team.owner_id === input.userId && input.role !== 'owner') {
      throw new AppError(409, 'owner_role_fixed', 'The team owner keeps the owner role');
    }
    return repo.upsertTeamMember(trx, { team_id: input.teamId, user_id: input.userId, role: input.role });
  });
}

/** The slug is the name's slug, suffixed when the team already has it. */
export async function createProject(
  db: Database,
  input: { teamId: string; name: string; createdBy?: string | null; systemPurpose?: string | null },
) {
  return db.transaction().execute(async (trx) => {
    if (!(await repo.findActiveTeam(trx, input.teamId))) throw notFound(`Team ${input.teamId}`);
    const base = slugify(input.name);
    const slug = (await repo.findProjectBySlug(trx, input.teamId, base)) ? `${base}-${randomBytes(3).toString('hex')}` : base;
    return repo.insertProject(trx, {
      id: newId(), team_id: input.teamId, slug, name: input.name,
      created_by: input.createdBy ?? null, system_purpose: input.systemPurpose ?? null,
    });
  });
}

export interface ProjectView { id: string; teamId: string; slug: string; name: string; systemPurpose: string | null; deletionLocked: boolean; createdAt: string }

/**
 * A team's projects, for anyone who may read the team (its members, its API keys); anyone else
 * gets exactly what a missing team gets, 404 `Team not found`.
 */
export async function listTeamProjects(db: Database, caller: AccessCaller, teamId: string): Promise<ProjectView[]> {
  if ((await teamLevel(db, caller, teamId)) === 'none') throw teamNotFound();
  return (await repo.listLiveProjectsOfTeam(db, teamId)).map((p) => ({
    id: p.id, teamId: p.team_id, slug: p.slug, name: p.name, systemPurpose: p.system_purpose,
    deletionLocked: p.deletion_locked, createdAt: p.created_at.toISOString(),
  }));
}
