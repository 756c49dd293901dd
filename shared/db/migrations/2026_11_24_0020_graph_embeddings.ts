import { sql, type Kysely } from 'kysely';

// Frozen once landed: change the schema with a new migration, never by editing this file.
// Project graph embeddings (docs/project-graph.md, graph.config `embeddingModel`):
// - `graph_generations.embedding_model`: the model that embedded the generation's facts (null: none).
//   Search compares a query only with vectors of the same model, so a model change until the next
//   build means text ranking only, never vectors of two models compared.
// - `graph_cosine(real[], real[])`: cosine similarity of two arrays (pgvector is not available here),
//   null when either is null, empty, of another length, or all zeros. Search applies it to its
//   candidate pool only (at most a few thousand rows), never to all of a generation's facts.

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('graph_generations').addColumn('embedding_model', 'text').execute();
  await sql`
    CREATE FUNCTION graph_cosine(a real[], b real[]) RETURNS double precision LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
      SELECT CASE WHEN cardinality(a) = cardinality(b) AND cardinality(a) > 0 THEN (
        SELECT sum(x::float8 * y) / nullif(sqrt(sum(x::float8 * x)) * sqrt(sum(y::float8 * y)), 0)
        FROM unnest(a, b) AS t(x, y)
      ) END
    $$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP FUNCTION IF EXISTS graph_cosine(real[], real[])`.execute(db);
  await db.schema.alterTable('graph_generations').dropColumn('embedding_model').execute();
}
