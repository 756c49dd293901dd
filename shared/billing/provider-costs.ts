import { isPlatformAdmin } from '../access/service.js';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import {
  countProviderCosts, findProviderCostFacet, findProviderCostPage, type ProviderCostFilter,
} from './provider-costs-repository.js';

// The model providers' token costs for the price administration screen (CONTRACTS.md "Backend
// routes beside it"): platform administrators only; filtered and paged here, not in the browser.

export interface ProviderCost {
  id: string; provider: string; model: string; input_cost_per_mtok: number; output_cost_per_mtok: number; currency: string; updated_at: string;
}
export interface FacetValue { value: string; count: number }

/** Platform administration is no secret address: a signed-in user who is not an administrator gets 403, not 404. */
async function requirePlatformAdmin(db: Database, userId: string): Promise<void> {
  if (!(await isPlatformAdmin(db, userId))) {
    throw new AppError(403, 'Forbidden', 'Only platform administrators can read the model provider costs');
  }
}

/** One page of the costs the filter matches and their total, as the data API's relation shows the rows (numbers as numbers). */
export async function listProviderCosts(
  db: Database, userId: string, filter: ProviderCostFilter, page: { limit: number; offset: number },
): Promise<{ data: ProviderCost[]; total: number }> {
  await requirePlatformAdmin(db, userId);
  const rows = await findProviderCostPage(db, filter, page);
  // An offset past the end returns no row, hence no window count: count separately then.
  const total = rows.length > 0 ? Number(rows[0]!.total) : await countProviderCosts(db, filter);
  return {
    total,
    data: rows.map(({ total: _total, ...row }) => ({
      ...row, input_cost_per_mtok: Number(row.input_cost_per_mtok), output_cost_per_mtok: Number(row.output_cost_per_mtok), updated_at: row.updated_at.toISOString(),
    })),
  };
}

/**
 * The filter's choices with their row counts. Each facet applies the other filter but not its own,
 * so the provider list stays whole while a provider is picked (and its models narrow).
 */
export async function providerCostFacets(
  db: Database, userId: string, filter: ProviderCostFilter,
): Promise<{ providers: FacetValue[]; models: FacetValue[] }> {
  await requirePlatformAdmin(db, userId);
  const [providers, models] = await Promise.all([
    findProviderCostFacet(db, 'provider', { model: filter.model }),
    findProviderCostFacet(db, 'model', { provider: filter.provider }),
  ]);
  return {
    providers: providers.map((row) => ({ value: row.provider, count: Number(row.count) })),
    models: models.map((row) => ({ value: row.model, count: Number(row.count) })),
  };
}
