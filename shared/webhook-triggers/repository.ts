import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import { executePrepared, type Database } from '../db/client.js';
import type { WebhookTriggersTable } from '../db/types.js';

// Kysely queries only: access rules, the 404 policy and mapping live in service.ts.

export type WebhookTriggerRow = Selectable<WebhookTriggersTable>;

/**
 * Called inside the publish transaction: the first publish creates the document's trigger, every
 * later one re-points it to the new deployment and re-binds the paying team (spec §3.6).
 */
export async function upsertTriggerOnPublish(db: Database, published: { documentId: string; projectId: string; teamId: string; deploymentId: string }): Promise<void> {
  await db.insertInto('webhook_triggers')
    .values({
      id: sql<string>`gen_random_uuid()`, document_id: published.documentId, project_id: published.projectId,
      team_id: published.teamId, deployment_id: published.deploymentId,
    })
    .onConflict((oc) => oc.column('document_id').doUpdateSet({
      deployment_id: published.deploymentId, team_id: published.teamId, updated_at: sql<Date>`now()`,
    }))
    .execute();
}

export async function findTriggerOfDocument(db: Database, documentId: string): Promise<WebhookTriggerRow | undefined> {
  return db.selectFrom('webhook_triggers').selectAll().where('document_id', '=', documentId).executeTakeFirst();
}

export async function updateTriggerSecret(db: Database, triggerId: string, secret: { hash: string; prefix: string }): Promise<void> {
  await db.updateTable('webhook_triggers')
    .set({ secret_hash: secret.hash, secret_prefix: secret.prefix, updated_at: sql<Date>`now()` })
    .where('id', '=', triggerId).execute();
}

/**
 * Everything a trigger call decides on, in one query that runs the same way for every request
 * (unknown ids included). Joined rows that are deleted come back as nulls. Prepared, like the API
 * key lookup of the run route it stands in for: planned once per connection, not once per call.
 */
export async function findTriggerForCall(db: Database, webhookId: string) {
  const [row] = await executePrepared(db, 'find_webhook_trigger_for_call', db.selectFrom('webhook_triggers as wt')
    .leftJoin('documents as doc', (join) => join.onRef('doc.id', '=', 'wt.document_id').on('doc.deleted_at', 'is', null))
    .leftJoin('deployments as d', (join) => join.onRef('d.id', '=', 'wt.deployment_id').on('d.deleted_at', 'is', null))
    .leftJoin('teams as t', (join) => join.onRef('t.id', '=', 'wt.team_id').on('t.deleted_at', 'is', null))
    .select([
      'wt.id', 'wt.enabled', 'wt.secret_hash', 'doc.id as live_document_id', 'doc.name as app_name', 't.id as billable_team_id',
      'd.id as deployment_id', 'd.document_id', 'd.project_id as deployment_project_id', 'd.team_id as deployment_team_id', 'd.visibility', 'd.api_schema',
      'd.published_by', 'd.version_major', 'd.version_minor',
    ])
    .where('wt.id', '=', webhookId)
    .compile());
  return row;
}

/**
 * `last_triggered_at`, to the second: a trigger called many times a second is written once a
 * second, not once a call (every call's update queued on the same row lock under load). The
 * calling process also skips the statement within a second of its own last one (`TriggerMarks`).
 */
export async function markTriggered(db: Database, triggerId: string): Promise<void> {
  await executePrepared(db, 'mark_webhook_triggered', db.updateTable('webhook_triggers').set({ last_triggered_at: sql<Date>`now()` }).where('id', '=', triggerId)
    .where((eb) => eb.or([eb('last_triggered_at', 'is', null), eb('last_triggered_at', '<', sql<Date>`now() - interval '1 second'`)]))
    .compile());
}
