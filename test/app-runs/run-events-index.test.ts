import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRunEventsAfter, RUN_EVENTS_READ_LIMIT } from '../../shared/app-runs/run-events-repository.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// Migration 0032 (docs/decisions.md, issue 45): a run's events after an id are found through
// (run_id, id), so a read visits only those events: not all of the run's (then sorted), nor other
// runs' ids. (On a table this small PostgreSQL may still sort the few rows it found; on a million
// events it walks the index in order, see the decision.)

const LONG_RUN = '11111111-1111-4111-8111-111111111111';
const OTHER_RUNS = 400;
const EVENTS = 40_000;
/** Every 20th event is the long run's: 2,000 of them, spread among the other runs' as concurrent runs write them. */
const LONG_RUN_EVERY = 20;

describe('run_events (run_id, id): a resumed read visits only the events after the id', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.db.transaction().execute(async (trx) => {
      // The events' runs need no rows for a plan: foreign keys off for this bulk load only.
      await sql`SET LOCAL session_replication_role = replica`.execute(trx);
      await sql`
        INSERT INTO run_events (run_id, event_key, type, payload)
        SELECT CASE WHEN i % ${LONG_RUN_EVERY}::int = 0 THEN ${LONG_RUN}::uuid
                    ELSE ('00000000-0000-4000-8000-' || lpad(to_hex(i % ${OTHER_RUNS}::int), 12, '0'))::uuid END,
               'e' || i, 'block_chunk', '{"blockId":"llm","delta":"x"}'::jsonb
        FROM generate_series(1, ${EVENTS}::int) AS i ORDER BY i`.execute(trx);
    });
    await sql`ANALYZE run_events`.execute(stack.db);
  });
  afterAll(() => stack?.close());

  const longRunIds = async () => (await stack.db.selectFrom('run_events').select('id').where('run_id', '=', LONG_RUN).orderBy('id').execute()).map((r) => Number(r.id));

  it('exists on (run_id, id)', async () => {
    const { rows } = await sql<{ indexdef: string }>`SELECT indexdef FROM pg_indexes WHERE tablename = 'run_events' AND indexname = 'run_events_run_id_id_idx'`.execute(stack.db);
    expect(rows.map((r) => r.indexdef)).toEqual(['CREATE INDEX run_events_run_id_id_idx ON public.run_events USING btree (run_id, id)']);
  });

  it.each(['force_custom_plan', 'force_generic_plan'])('the read after an id (%s) is a range of the (run_id, id) index', async (mode) => {
    const ids = await longRunIds();
    const plan = await stack.db.connection().execute(async (conn) => {
      await sql.raw(`SET plan_cache_mode = ${mode}`).execute(conn);
      // The statement readRunEventsAfter prepares, as a prepared statement (the generic plan is the one reused).
      await sql.raw('PREPARE read_after(uuid, bigint) AS SELECT id, type, payload FROM run_events WHERE run_id = $1 AND id > $2 ORDER BY id LIMIT 1000').execute(conn);
      try {
        const { rows } = await sql.raw<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) EXECUTE read_after('${LONG_RUN}', ${ids[100]})`).execute(conn);
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      } finally {
        await sql.raw('DEALLOCATE read_after').execute(conn);
        await sql.raw('RESET plan_cache_mode').execute(conn);
      }
    });
    expect(plan).toMatch(/Index Scan (using|on) run_events_run_id_id_idx/);
    expect(plan).toMatch(/Index Cond: \(\(run_id = .+\) AND \(id > .+\)\)/);
    expect(plan).not.toMatch(/run_events_pkey|run_events_run_key|Seq Scan/);
  });

  it('returns the run\'s events after the id, in order, at most the read limit', async () => {
    const ids = await longRunIds();
    const after = ids[100]!;
    const read = await readRunEventsAfter(stack.db, LONG_RUN, after);
    expect(read.map((e) => Number(e.id))).toEqual(ids.slice(101, 101 + RUN_EVENTS_READ_LIMIT));
    expect(await readRunEventsAfter(stack.db, LONG_RUN, ids.at(-1)!)).toEqual([]);
  });
});
