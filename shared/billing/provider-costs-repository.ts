import { sql, type SelectQueryBuilder } from 'kysely';
import type { Database } from '../db/client.js';
import type { DB } from '../db/types.js';

// Kysely queries only: who may read the costs and the paging rules live in provider-costs.ts.

export interface ProviderCostFilter { provider?: string; model?: string }

const filtered = <O>(query: SelectQueryBuilder<DB, 'model_provider_costs', O>, filter: ProviderCostFilter) => {
  let q = query;
  if (filter.provider !== undefined) q = q.where('provider', '=', filter.provider);
  if (filter.model !== undefined) q = q.where('model', '=', filter.model);
  return q;
};

/** One page, in a stable order, and how many rows the filter matches (one statement: the count is a window over the filter). */
export async function findProviderCostPage(db: Database, filter: ProviderCostFilter, page: { limit: number; offset: number }) {
  const rows = await filtered(db.selectFrom('model_provider_costs'), filter)
    .select(['id', 'provider', 'model', 'input_cost_per_mtok', 'output_cost_per_mtok', 'currency', 'updated_at'])
    .select(sql<number>`count(*) over ()`.as('total'))
    .orderBy('provider').orderBy('model').orderBy('id')
    .limit(page.limit).offset(page.offset)
    .execute();
  return rows;
}

export const countProviderCosts = async (db: Database, filter: ProviderCostFilter): Promise<number> =>
  Number((await filtered(db.selectFrom('model_provider_costs'), filter).select(sql<string>`count(*)`.as('n')).executeTakeFirstOrThrow()).n);

/** The distinct values of `column` among the rows `filter` matches, with their counts, most frequent first. */
export const findProviderCostFacet = (db: Database, column: 'provider' | 'model', filter: ProviderCostFilter) =>
  filtered(db.selectFrom('model_provider_costs'), filter)
    .select([column, sql<string>`count(*)`.as('count')])
    .groupBy(column)
    .orderBy(sql`count(*)`, 'desc').orderBy(column)
    .execute();
