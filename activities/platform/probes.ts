import type { ActivityDeps } from '../deps.js';

/** Activities behind the platform probe: the smallest real round trip (Temporal → worker → Postgres). */
export function createPlatformActivities({ db }: ActivityDeps) {
  return {
    /** Idempotent on probeId: a retried attempt finds the row the first attempt wrote. */
    async recordPlatformProbe(input: { probeId: string; workflowId: string; note: string }): Promise<{ probeId: string; recordedAt: string }> {
      await db.insertInto('platform_probes')
        .values({ id: input.probeId, workflow_id: input.workflowId, note: input.note })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      const row = await db.selectFrom('platform_probes').select('created_at').where('id', '=', input.probeId).executeTakeFirstOrThrow();
      return { probeId: input.probeId, recordedAt: row.created_at.toISOString() };
    },
  };
}
