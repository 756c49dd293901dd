// The data API's allowlist (CONTRACTS.md "Frontend data access"): the only relations and functions
// of schema `public` a request may name. Anything else answers 404 PGRST205/PGRST202 before any SQL
// is built, and only names that are here (and in the schema cache) are ever quoted into a statement.

export const DATA_API_SCHEMA = 'public';

export const dataApiRelations = [
  'subscriptions',
  'credit_balances',
  'credit_transactions',
  'billing_rules',
  'model_provider_costs',
  'grants',
  'audit_logs',
  'audit_logs_with_names',
  'api_keys',
  'site_settings',
  'documents',
  'deployments',
  'projects',
  'files',
  'team_members',
  'runs',
  'payment_orders',
  'project_schedules',
  'romp_messages',
  'assets_sessions',
  'assets_items',
  'run_approvals',
] as const;

export const dataApiFunctions = ['get_usage_heatmap', 'delete_api_key'] as const;

export type DataApiRelation = (typeof dataApiRelations)[number];
export type DataApiFunction = (typeof dataApiFunctions)[number];

const relationSet: ReadonlySet<string> = new Set(dataApiRelations);
const functionSet: ReadonlySet<string> = new Set(dataApiFunctions);

export const isDataApiRelation = (name: string): name is DataApiRelation => relationSet.has(name);
export const isDataApiFunction = (name: string): name is DataApiFunction => functionSet.has(name);

/** The database roles requests run as (created by migration 0024). */
export const DATA_API_ROLES = ['anon', 'authenticated'] as const;
