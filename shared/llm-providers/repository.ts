import type { Selectable } from 'kysely';
import type { Database } from '../db/client.js';
import type { TeamLlmProvidersTable } from '../db/types.js';

export type LlmProviderRow = Selectable<TeamLlmProvidersTable>;

export interface LlmProviderWrite {
  teamId: string;
  name: string;
  baseUrl: string;
  apiKeySealed: string;
  apiKeyPreview: string | null;
  createdBy: string;
}

/** Creates the team's provider or replaces its URL and key (`created_*` stay those of the first write). */
export function upsertLlmProvider(db: Database, p: LlmProviderWrite): Promise<LlmProviderRow> {
  return db.insertInto('team_llm_providers')
    .values({
      team_id: p.teamId, name: p.name, base_url: p.baseUrl, api_key_sealed: p.apiKeySealed, api_key_preview: p.apiKeyPreview, created_by: p.createdBy,
    })
    .onConflict((oc) => oc.columns(['team_id', 'name']).doUpdateSet((eb) => ({
      base_url: eb.ref('excluded.base_url'),
      api_key_sealed: eb.ref('excluded.api_key_sealed'),
      api_key_preview: eb.ref('excluded.api_key_preview'),
      updated_at: new Date(),
    })))
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function listLlmProviders(db: Database, teamId: string): Promise<LlmProviderRow[]> {
  return db.selectFrom('team_llm_providers').selectAll().where('team_id', '=', teamId).orderBy('name').execute();
}

export async function deleteLlmProvider(db: Database, teamId: string, name: string): Promise<boolean> {
  const result = await db.deleteFrom('team_llm_providers').where('team_id', '=', teamId).where('name', '=', name).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** The paying team of a run and, when that team has one, its provider named `name`. */
export async function findRunLlmProvider(db: Database, runId: string, name: string): Promise<{ teamId: string; provider: LlmProviderRow | null } | null> {
  const run = await db.selectFrom('runs').select('team_id').where('id', '=', runId).executeTakeFirst();
  if (!run) return null;
  const provider = await db.selectFrom('team_llm_providers').selectAll()
    .where('team_id', '=', run.team_id).where('name', '=', name).executeTakeFirst();
  return { teamId: run.team_id, provider: provider ?? null };
}
