import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import type { RunStatus } from '../db/types.js';
import { memberTeamIds } from '../access/repository.js';

// Kysely queries only, for the signed-in user's run list and details (GET /runs, GET /runs/:runId).
// A user sees the runs recorded against (paid by) an active team they are a member of.

export interface RunListRow {
  id: string;
  deployment_id: string;
  document_id: string;
  team_id: string;
  trigger_source: string;
  status: RunStatus;
  error: string | null;
  created_at: Date;
  finished_at: Date | null;
  version_major: number;
  version_minor: number;
  document_name: string;
  /** `created_at` in UTC with microseconds, exactly as stored: the keyset cursor's first half. */
  created_at_exact: string;
}

export interface RunDetailRow extends RunListRow {
  inputs: unknown;
  result: unknown;
}

/** Keyset position: the last row of the previous page. */
export interface RunCursor { createdAt: string; id: string }

export interface ListRunsQuery {
  userId: string;
  limit: number;
  cursor?: RunCursor;
  offset?: number;
  deploymentId?: string;
  documentId?: string;
  teamId?: string;
  status?: RunStatus;
}

function runsOfUser(db: Database, userId: string) {
  return db.selectFrom('runs as r')
    .innerJoin('deployments as dp', 'dp.id', 'r.deployment_id')
    .innerJoin('documents as d', 'd.id', 'r.document_id')
    .where('r.team_id', 'in', memberTeamIds(db, userId))
    .select([
      'r.id', 'r.deployment_id', 'r.document_id', 'r.team_id', 'r.trigger_source', 'r.status', 'r.error',
      'r.created_at', 'r.finished_at', 'dp.version_major', 'dp.version_minor', 'd.name as document_name',
      sql<string>`to_char(r.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as('created_at_exact'),
    ]);
}

/** Newest first (`created_at`, then `id`, both descending); `limit` rows at most. */
export async function listRunsOfUser(db: Database, query: ListRunsQuery): Promise<RunListRow[]> {
  let q = runsOfUser(db, query.userId);
  if (query.deploymentId) q = q.where('r.deployment_id', '=', query.deploymentId);
  if (query.documentId) q = q.where('r.document_id', '=', query.documentId);
  if (query.teamId) q = q.where('r.team_id', '=', query.teamId);
  if (query.status) q = q.where('r.status', '=', query.status);
  if (query.cursor) {
    const { createdAt, id } = query.cursor;
    q = q.where(sql<boolean>`(r.created_at, r.id) < (${createdAt}::timestamptz, ${id}::uuid)`);
  }
  q = q.orderBy('r.created_at', 'desc').orderBy('r.id', 'desc').limit(query.limit);
  if (query.offset) q = q.offset(query.offset);
  return q.execute();
}

/** One run of a team the user belongs to, or undefined (missing and foreign runs alike). */
export async function findRunOfUser(db: Database, userId: string, runId: string): Promise<RunDetailRow | undefined> {
  return runsOfUser(db, userId).select(['r.inputs', 'r.result']).where('r.id', '=', runId).executeTakeFirst();
}

/** What following a run (its events, cancelling it) needs to decide who may: any run, by id. */
export async function findRunToFollow(db: Database, runId: string) {
  return db.selectFrom('runs').select(['id', 'team_id', 'user_id', 'status']).where('id', '=', runId).executeTakeFirst();
}

// The generic /v1 API's runs (api/routes/app-runs/v1.ts): those recorded against the API key's team.

/** One run paid by the team, or undefined (missing and foreign runs alike). */
export async function findRunOfTeam(db: Database, teamId: string, runId: string) {
  return db.selectFrom('runs').select(['id', 'status', 'result', 'error']).where('id', '=', runId).where('team_id', '=', teamId).executeTakeFirst();
}

/** A document's runs paid by the team, newest first; `limit` rows at most. */
export async function listDocumentRunsOfTeam(db: Database, teamId: string, documentId: string, limit: number) {
  return db.selectFrom('runs').select(['id', 'status', 'created_at', 'finished_at'])
    .where('document_id', '=', documentId).where('team_id', '=', teamId)
    .orderBy('created_at', 'desc').limit(limit).execute();
}

// A scheduled run's attempt (activities/schedules/scheduled-run.ts) reads its run back.

/** The run's recorded timeout; throws when there is no such run. */
export async function findRunTimeoutSeconds(db: Database, runId: string): Promise<number | null> {
  return (await db.selectFrom('runs').select('timeout_seconds').where('id', '=', runId).executeTakeFirstOrThrow()).timeout_seconds;
}

/** What closing a scheduled attempt's log needs of its run; throws when there is no such run. */
export async function findRunOutcome(db: Database, runId: string) {
  return db.selectFrom('runs').select(['status', 'document_id', 'error']).where('id', '=', runId).executeTakeFirstOrThrow();
}
