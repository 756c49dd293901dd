import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

/** A column the database fills in (default) but callers may also set. */
type Defaulted<T> = ColumnType<T, T | undefined, T>;
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
type Json = ColumnType<unknown, string, string>;

export type PlanCode = 'free' | 'pro' | 'business' | 'infrastructure';
export type TeamRole = 'owner' | 'admin' | 'member';
export type ProjectVisibility = 'private' | 'public';

export interface UsersTable {
  id: string;
  email: string;
  name: string | null;
  phone: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface TeamsTable {
  id: string;
  slug: string;
  name: string;
  owner_id: string;
  plan_code: Defaulted<PlanCode>;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
}

export interface TeamMembersTable {
  team_id: string;
  user_id: string;
  role: TeamRole;
  created_at: Timestamp;
}

export interface ProjectsTable {
  id: string;
  team_id: string;
  slug: string;
  name: string;
  system_purpose: string | null;
  visibility: Defaulted<ProjectVisibility>;
  deletion_locked: Defaulted<boolean>;
  created_by: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
}

export interface SiteSettingsTable {
  key: string;
  value: Json;
  updated_at: Timestamp;
}

export interface CreditBalancesTable {
  team_id: string;
  balance_milli: Defaulted<number>;
  updated_at: Timestamp;
}

export interface CreditTransactionsTable {
  id: string;
  team_id: string;
  amount_milli: number;
  reason: string;
  reference: string | null;
  created_by: string | null;
  created_at: Timestamp;
}

export interface ApiKeysTable {
  id: string;
  team_id: string;
  created_by: string;
  name: string;
  description: string | null;
  key_hash: string;
  limit_credits: number | null;
  usage_credits: Defaulted<number>;
  expires_at: NullableTimestamp;
  last_used_at: NullableTimestamp;
  created_at: Timestamp;
  deleted_at: NullableTimestamp;
}

export interface PlatformProbesTable {
  id: string;
  workflow_id: string;
  note: string;
  created_at: Timestamp;
}

export interface DB {
  users: UsersTable;
  teams: TeamsTable;
  team_members: TeamMembersTable;
  projects: ProjectsTable;
  site_settings: SiteSettingsTable;
  credit_balances: CreditBalancesTable;
  credit_transactions: CreditTransactionsTable;
  api_keys: ApiKeysTable;
  platform_probes: PlatformProbesTable;
}

export type User = Selectable<UsersTable>;
export type Team = Selectable<TeamsTable>;
export type NewTeam = Insertable<TeamsTable>;
export type TeamUpdate = Updateable<TeamsTable>;
export type Project = Selectable<ProjectsTable>;
export type ApiKey = Selectable<ApiKeysTable>;
export type { Generated };
