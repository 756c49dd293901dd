import { sql, type RawBuilder } from 'kysely';
import type { GraphSourceTable } from '../db/types.js';

// Source version ids: a uuid derived from everything of a source row a fact can quote, plus its
// update time (md5 as a version 8 uuid: `graph_version_uuid`, migration 0019). Computed by
// PostgreSQL with one expression per table, the same one when a generation records its artifacts
// and when search verifies them, so "the source changed" is exactly "this expression now gives
// another uuid" (or no row: deleted, or moved to another project).

const col = (alias: string, column: string) => sql.ref(`${alias}.${column}`);

/** A document: its name, graph and update time. */
export const documentVersion = (alias: string): RawBuilder<string> => sql<string>`graph_version_uuid(concat_ws(':', 'documents', ${col(alias, 'id')}::text,
  ${col(alias, 'name')}, ${col(alias, 'graph')}::text, (extract(epoch from ${col(alias, 'updated_at')}) * 1000000)::bigint::text))`;

/** A deployment is immutable once published: its snapshot and version. */
export const deploymentVersion = (alias: string): RawBuilder<string> => sql<string>`graph_version_uuid(concat_ws(':', 'deployments', ${col(alias, 'id')}::text,
  ${col(alias, 'version_major')}::text, ${col(alias, 'version_minor')}::text, ${col(alias, 'snapshot')}::text))`;

/** A stored file: its bytes (sha256 and size), name and type. */
export const fileVersion = (alias: string): RawBuilder<string> => sql<string>`graph_version_uuid(concat_ws(':', 'files', ${col(alias, 'id')}::text,
  ${col(alias, 'sha256')}, ${col(alias, 'size')}::text, coalesce(${col(alias, 'original_name')}, ''), ${col(alias, 'content_type')}))`;

/**
 * The current version id of artifact `a`'s source row, or null when the row is gone, soft-deleted
 * or no longer in `projectId`: one scalar subquery per table, by primary key.
 */
export function currentSourceVersion(artifactAlias: string, projectId: string): RawBuilder<string | null> {
  const table = col(artifactAlias, 'source_table');
  const id = col(artifactAlias, 'source_id');
  const live = (alias: string) => sql`${col(alias, 'id')} = ${id} AND ${col(alias, 'project_id')} = ${projectId} AND ${col(alias, 'deleted_at')} IS NULL`;
  return sql<string | null>`CASE ${table}
    WHEN ${'documents' satisfies GraphSourceTable} THEN (SELECT ${documentVersion('sd')} FROM documents sd WHERE ${live('sd')})
    WHEN ${'deployments' satisfies GraphSourceTable} THEN (SELECT ${deploymentVersion('sp')} FROM deployments sp WHERE ${live('sp')})
    WHEN ${'files' satisfies GraphSourceTable} THEN (SELECT ${fileVersion('sf')} FROM files sf WHERE ${live('sf')})
  END`;
}
