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
  metadata: ColumnType<Record<string, unknown>, string | undefined, string>;
  is_agent: Defaulted<boolean>;
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

export interface AgentsTable {
  id: string;
  team_id: string | null;
  user_id: string;
  name: string;
  description: string | null;
  avatar_url: string | null;
  permissions: Defaulted<string[]>;
  created_by: string | null;
  created_at: Timestamp;
  deleted_at: NullableTimestamp;
}

export interface AgentBindingsTable {
  id: string;
  agent_id: string;
  agent_user_id: string;
  owner_user_id: string;
  team_id: string | null;
  token_hash: string | null;
  can_send: Defaulted<boolean>;
  can_receive: Defaulted<boolean>;
  created_at: Timestamp;
  revoked_at: NullableTimestamp;
  deleted_at: NullableTimestamp;
}

export type OAuthReviewStatus = 'private' | 'approved';
export type OAuthPlatform = 'web' | 'desktop' | 'mobile';

export interface OAuthAppsTable {
  id: string;
  owner_id: string;
  name: string;
  logo_url: string | null;
  review_status: Defaulted<OAuthReviewStatus>;
  created_at: Timestamp;
  disabled_at: NullableTimestamp;
  deleted_at: NullableTimestamp;
}

export interface OAuthClientsTable {
  id: string;
  app_id: string;
  client_id: string;
  platform: OAuthPlatform;
  redirect_uris: string[];
  allowed_scopes: string[];
  created_at: Timestamp;
}

export interface OAuthGrantsTable {
  id: string;
  client_pk: string;
  app_id: string;
  user_id: string;
  scopes: string[];
  created_at: Timestamp;
  revoked_at: NullableTimestamp;
}

export interface OAuthCodesTable {
  code_hash: string;
  grant_id: string;
  redirect_uri: string;
  code_challenge: string;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
}

export interface OAuthTokensTable {
  id: string;
  grant_id: string;
  kind: 'access' | 'refresh';
  token_hash: string;
  client_pk: string;
  app_id: string;
  user_id: string;
  scopes: string[];
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface DocumentsTable {
  id: string;
  project_id: string;
  name: string;
  graph: Json;
  created_by: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
}

export interface DeploymentsTable {
  id: string;
  document_id: string;
  project_id: string;
  team_id: string;
  version_major: number;
  version_minor: number;
  visibility: Defaulted<ProjectVisibility>;
  snapshot: Json;
  api_schema: Json;
  published_by: string | null;
  created_at: Timestamp;
  deleted_at: NullableTimestamp;
}

export type RunStatus = 'running' | 'completed' | 'failed' | 'cancelled' | 'timed_out';

export interface RunsTable {
  id: string;
  deployment_id: string;
  document_id: string;
  team_id: string;
  trigger_source: string;
  api_key_id: string | null;
  user_id: string | null;
  status: Defaulted<RunStatus>;
  inputs: Json;
  result: ColumnType<unknown, string | null | undefined, string | null>;
  error: string | null;
  timeout_seconds: number | null;
  created_at: Timestamp;
  finished_at: NullableTimestamp;
}

export interface RunEventsTable {
  id: Generated<number>;
  run_id: string;
  event_key: string;
  type: string;
  payload: Json;
  created_at: Timestamp;
}

/** A workflow start recorded with the request that asked for it (shared/workflow-starts/). */
export interface WorkflowStartsTable {
  workflow_id: string;
  workflow_type: string;
  task_queue: string;
  args: Json;
  search_attributes: Defaulted<Json>;
  static_summary: string | null;
  created_at: Timestamp;
  next_attempt_at: Defaulted<Date>;
  claimed_until: Date | null;
  attempts: Defaulted<number>;
  last_error: string | null;
}

/** A large value of a run (claim check); the workflow carries `{ $claim: key, bytes }` instead. */
export interface RunPayloadsTable {
  run_id: string;
  key: string;
  payload: Json;
  bytes: number;
  created_at: Timestamp;
}

export interface FilesTable {
  id: string;
  project_id: string;
  team_id: string;
  uploaded_by: string | null;
  api_key_id: string | null;
  size: number;
  content_type: string;
  original_name: string | null;
  sha256: string;
  storage_key: string;
  created_at: Timestamp;
  deleted_at: NullableTimestamp;
}

export interface RunIdempotencyKeysTable {
  scope: string;
  key: string;
  request_hash: string;
  run_id: string;
  created_at: Timestamp;
}

export interface WebhookTriggersTable {
  id: string;
  document_id: string;
  project_id: string;
  team_id: string | null;
  deployment_id: string | null;
  enabled: Defaulted<boolean>;
  secret_hash: string | null;
  secret_prefix: string | null;
  last_triggered_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SchedulesTable {
  id: string;
  project_id: string;
  team_id: string;
  deployment_id: string | null;
  name: string;
  description: string | null;
  cron_expression: string;
  timezone: Defaulted<string>;
  trigger_config: ColumnType<Record<string, unknown>, string | undefined, string>;
  enabled: Defaulted<boolean>;
  timeout_ms: number;
  max_retries: Defaulted<number>;
  created_by: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
}

export type ScheduleLogStatus = 'running' | 'success' | 'failed' | 'timed_out' | 'cancelled';

export interface ScheduleLogsTable {
  id: string;
  schedule_id: string;
  project_id: string;
  run_id: string | null;
  status: ScheduleLogStatus;
  scheduled_at: NullableTimestamp;
  started_at: ColumnType<Date, Date | string, Date | string>;
  finished_at: NullableTimestamp;
  error: string | null;
  result: ColumnType<Record<string, unknown>, string | undefined, string>;
}

export interface CrossTeamBindingsTable {
  id: string;
  owner_team_id: string;
  grantee_team_id: string;
  document_id: string;
  deployment_id: string | null;
  name: string;
  created_by: string | null;
  created_at: Timestamp;
  revoked_at: NullableTimestamp;
}

export interface ReleasesTable {
  id: string;
  project_id: string;
  team_id: string;
  alias: string;
  config: ColumnType<unknown, string | undefined, string>;
  anonymous_api_key_id: string | null;
  created_by: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
}

export interface ReleaseVersionsTable {
  id: string;
  release_id: string;
  version_major: number;
  version_minor: number;
  endpoints: Json;
  created_by: string | null;
  created_at: Timestamp;
}

/** Per-team LLM provider settings; `api_key_sealed` opens with the secrets key ring (shared/secrets). */
export interface TeamLlmProvidersTable {
  team_id: string;
  name: string;
  base_url: string;
  api_key_sealed: string;
  api_key_preview: string | null;
  created_by: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
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
  agents: AgentsTable;
  agent_bindings: AgentBindingsTable;
  oauth_apps: OAuthAppsTable;
  oauth_clients: OAuthClientsTable;
  oauth_grants: OAuthGrantsTable;
  oauth_codes: OAuthCodesTable;
  oauth_tokens: OAuthTokensTable;
  documents: DocumentsTable;
  deployments: DeploymentsTable;
  runs: RunsTable;
  run_events: RunEventsTable;
  run_payloads: RunPayloadsTable;
  run_idempotency_keys: RunIdempotencyKeysTable;
  files: FilesTable;
  webhook_triggers: WebhookTriggersTable;
  schedules: SchedulesTable;
  schedule_logs: ScheduleLogsTable;
  releases: ReleasesTable;
  release_versions: ReleaseVersionsTable;
  cross_team_bindings: CrossTeamBindingsTable;
  team_llm_providers: TeamLlmProvidersTable;
  workflow_starts: WorkflowStartsTable;
}

export type User = Selectable<UsersTable>;
export type Team = Selectable<TeamsTable>;
export type NewTeam = Insertable<TeamsTable>;
export type TeamUpdate = Updateable<TeamsTable>;
export type Project = Selectable<ProjectsTable>;
export type ApiKey = Selectable<ApiKeysTable>;
export type { Generated };
