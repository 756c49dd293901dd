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
  is_platform_admin: Defaulted<boolean>;
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
  auto_topup_enabled: Defaulted<boolean>;
  auto_topup_threshold_milli: Defaulted<number>;
  auto_topup_amount_milli: Defaulted<number>;
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

/** `private`: only its author may authorize it until reviewed; `rejected`: nobody may (migration 0025). */
export type OAuthReviewStatus = 'private' | 'approved' | 'rejected';
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
  /** An official app: only platform administrators may edit or delete it (migration 0025). */
  reserved: Defaulted<boolean>;
  reviewed_at: NullableTimestamp;
  reviewed_by: string | null;
  review_note: string | null;
}

export interface OAuthClientsTable {
  id: string;
  app_id: string;
  client_id: string;
  platform: OAuthPlatform;
  redirect_uris: string[];
  allowed_scopes: string[];
  created_at: Timestamp;
  /** Removed from its app (DELETE /oauth/apps/:appId/clients/:clientId); its grants and tokens were revoked with it. */
  deleted_at: NullableTimestamp;
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

/** `waiting`: the run's workflow sleeps on a `wait` or `approval` block (docs/long-runs.md); still open, like `running`. */
export type RunStatus = 'running' | 'waiting' | 'completed' | 'failed' | 'cancelled' | 'timed_out';

export interface RunsTable {
  id: string;
  deployment_id: string;
  document_id: string;
  /** Migration 0023: the deployment's project (a trigger fills it when an insert leaves it out). */
  project_id: Defaulted<string>;
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

/** Migration 2026_11_27_0030: the team's Standard Webhooks secret of run callbacks (shared/app-runs/callbacks). */
export interface TeamOutboundWebhookSecretsTable {
  team_id: string;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_expires_at: Date | null;
  created_at: Timestamp;
  rotated_at: Timestamp;
}

export type RunApprovalStatus = 'pending' | 'approved' | 'rejected' | 'timed_out' | 'cancelled';

/** Migration 2026_11_27_0031: an approval block a run reached, and its decision (shared/app-runs/approvals). */
export interface RunApprovalsTable {
  id: string;
  run_id: string;
  team_id: string;
  block_id: string;
  prompt: string;
  fields: Record<string, unknown> | null;
  status: Defaulted<RunApprovalStatus>;
  token_hash: string;
  data: unknown;
  comment: string | null;
  decided_by: string | null;
  decided_at: Date | null;
  expires_at: Date;
  created_at: Timestamp;
}

export type CallbackDeliveryStatus = 'pending' | 'delivered' | 'failed';

/** Migration 2026_11_27_0030: a run callback's delivery log, one row per event. */
export interface RunCallbackDeliveriesTable {
  run_id: string;
  event_id: number;
  type: string;
  url: string;
  attempts: Defaulted<number>;
  status: Defaulted<CallbackDeliveryStatus>;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: Timestamp;
  updated_at: Timestamp;
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

// Hardware sales (migration 2026_11_24_0013): docs/hardware-sales.md.
type JsonObject<T = Record<string, unknown>> = ColumnType<T, string | undefined, string>;
type NullableJson<T> = ColumnType<T | null, string | null | undefined, string | null>;

export type HwSalesMode = 'standard' | 'preorder';
export type HwSkuStatus = 'active' | 'draft' | 'archived';
export type HwTierKind = 'standard' | 'early_bird' | 'deposit';
export type HwPaymentStatus = 'unpaid' | 'paid' | 'refunded' | 'closed';
export type HwFulfillmentStatus = 'not_paid' | 'awaiting_stock' | 'preparing' | 'shipped' | 'delivered' | 'cancelled';
export type HwOrderStatus = 'open' | 'shipped' | 'delivered' | 'cancelled';
export type HwRefundStatus = 'processing' | 'succeeded' | 'abnormal' | 'closed';
export type HwEventSource = 'user' | 'system' | 'operator' | 'channel';

export interface HwSkusTable {
  id: string;
  sku: string;
  title: string;
  currency: Defaulted<string>;
  sales_mode: Defaulted<HwSalesMode>;
  status: Defaulted<HwSkuStatus>;
  cost_cents: number | null;
  created_at: Timestamp;
}

export interface HwTiersTable {
  id: string;
  sku_id: string;
  tier_code: string;
  title: string;
  kind: Defaulted<HwTierKind>;
  is_standard: Defaulted<boolean>;
  price_cents: number;
  pay_now_cents: number | null;
  top_up_cents: number | null;
  stock: number;
  display_limit: number | null;
  starts_at: NullableTimestamp;
  ends_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface HwDiscountCodesTable {
  id: string;
  code: string;
  title: string | null;
  discount_cents: number;
  max_uses: number | null;
  used_count: Defaulted<number>;
  per_person_limit: number | null;
  min_amount_cents: Defaulted<number>;
  starts_at: NullableTimestamp;
  expires_at: NullableTimestamp;
  sku_id: string | null;
  tier_code: string | null;
  status: Defaulted<'active' | 'disabled' | 'expired'>;
  kind: Defaulted<'standard' | 'friend'>;
  source_order_id: string | null;
  creator_user_id: string | null;
  metadata: JsonObject;
  created_at: Timestamp;
}

export interface HwAddress {
  receiverName: string;
  receiverPhone?: string | null;
  province: string;
  city: string;
  district?: string | null;
  addressLine: string;
  postalCode?: string | null;
}

export type HwPayProvider = 'chan_a' | 'chan_b';

export interface HwOrdersTable {
  id: string;
  order_no: string;
  payment_no: string;
  user_id: string;
  phone: string | null;
  sku_id: string;
  tier_id: string;
  sku: string;
  tier_code: string;
  currency: string;
  original_amount_cents: number;
  discount_cents: Defaulted<number>;
  final_amount_cents: number;
  discount_code_id: string | null;
  discount_snapshot: NullableJson<Record<string, unknown>>;
  payment_status: Defaulted<HwPaymentStatus>;
  fulfillment_status: Defaulted<HwFulfillmentStatus>;
  order_status: Defaulted<HwOrderStatus>;
  refund_status: HwRefundStatus | null;
  address: ColumnType<HwAddress, string, string>;
  address_version: Defaulted<number>;
  customer_note: string | null;
  operator_note: string | null;
  carrier: string | null;
  tracking_no: string | null;
  transaction_id: string | null;
  channel: string | null;
  utm: NullableJson<Record<string, unknown>>;
  lang: string | null;
  /** The open payment (migration 0014): the channel and scene it was opened with, and the answer given. */
  pay_provider: HwPayProvider | null;
  pay_scene: string | null;
  pay_answer: NullableJson<Record<string, unknown>>;
  pay_requested_at: NullableTimestamp;
  expires_at: Timestamp;
  paid_at: NullableTimestamp;
  shipped_at: NullableTimestamp;
  delivered_at: NullableTimestamp;
  cancelled_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** The official account an OAuth client id uses for chan_a in-app pay (`chan-a account set`). */
/** `board_assets` (docs/public-config.md): a registered board firmware or board app installer. */
export type BoardAssetKind = 'board-firmware' | 'board-app';
export interface BoardAssetsTable {
  kind: BoardAssetKind;
  /** `stable` / `beta` for firmware, the platform for apps. */
  target: string;
  sha256: string;
  file_name: string;
  size: number;
  created_at: Timestamp;
}

export interface FirmwareFilesTable {
  model: string;
  module: 'main' | 'wifi';
  file_name: string;
  sha256: string;
  size: number;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface BluetoothFiltersTable {
  id: string;
  name_prefix: string;
  product_model_id: string;
  model_name: string;
  generation: 'gen1' | 'gen2' | null;
  role: Defaulted<'full' | 'upgrade_only'>;
  requires_inventory_check: Defaulted<boolean>;
  created_at: Timestamp;
}

export interface BillingPricesTable {
  id: string;
  product_type: 'credits' | 'subscription';
  product_code: string;
  name: string;
  description: string | null;
  /** Minor units of `currency`. */
  amount: number;
  currency: string;
  /** Whole credits. */
  credits: Defaulted<number>;
  billing_period: Defaulted<'one_time' | 'month' | 'year'>;
  is_featured: Defaulted<boolean>;
  active: Defaulted<boolean>;
  created_at: Timestamp;
}

export interface BillingPaymentMethodsTable {
  id: string;
  name: string;
  currencies: ColumnType<string[], string | undefined, string>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type BillingProvider = 'chan_a' | 'chan_b' | 'paddle' | 'manual' | 'mock';
export type BillingOrderStatus = 'pending' | 'paid' | 'failed' | 'refunded';

export interface BillingOrdersTable {
  id: string;
  team_id: string;
  user_id: string;
  price_id: string;
  provider: BillingProvider;
  provider_order_id: string;
  amount: number;
  currency: string;
  /** Whole credits granted when paid. */
  credits: number;
  product_type: string;
  billing_period: string;
  status: Defaulted<BillingOrderStatus>;
  pay_url: string | null;
  channel_reference: string | null;
  refunded_amount: Defaulted<number>;
  paid_at: NullableTimestamp;
  failed_at: NullableTimestamp;
  refunded_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface BillingPaymentEventsTable {
  id: string;
  provider: string;
  event_id: string;
  order_id: string | null;
  kind: 'paid' | 'failed' | 'refunded';
  outcome: string;
  amount: number | null;
  currency: string | null;
  payload: Json;
  received_at: Timestamp;
}

export interface ConnectorCredentialField { key: string; label: string; type: string; secret: boolean; required: boolean; helpUrl?: string }

export interface ConnectorsTable {
  id: string;
  service: string;
  display_name: string;
  description: Defaulted<string>;
  categories: ColumnType<string[], string | undefined, string>;
  auth_type: string;
  credential_fields: ColumnType<ConnectorCredentialField[], string, string>;
  supported_triggers: ColumnType<string[], string | undefined, string>;
  status: Defaulted<'approved' | 'pending' | 'rejected'>;
  circuit_broken: Defaulted<boolean>;
  /** numeric: pg returns a string. */
  credit_multiplier: ColumnType<string, string | number | undefined, string | number>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type ConnectionStatus = 'pending' | 'active' | 'invalid' | 'revoked';

export interface ConnectorConnectionsTable {
  id: string;
  user_id: string;
  service: string;
  account_label: string;
  status: Defaulted<ConnectionStatus>;
  credentials_sealed: ColumnType<Record<string, string>, string, string>;
  credential_mask: ColumnType<Record<string, string>, string, string>;
  last_verified_at: NullableTimestamp;
  last_error_code: string | null;
  revoked_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ConnectorBindingsTable {
  id: string;
  document_id: string;
  connection_id: string;
  trigger: string;
  poll_seconds: number | null;
  enabled: Defaulted<boolean>;
  created_by: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ConnectorPollCursorsTable {
  binding_id: string;
  /** bigint: pg returns it as a string. */
  uidvalidity: string | number;
  last_uid: string | number;
  updated_at: Timestamp;
}

export interface ConnectorEventsTable {
  id: string;
  connection_id: string;
  uidvalidity: string | number;
  uid: string | number;
  message_id: string;
  subject: string;
  from_header: string;
  to_header: string;
  /** ISO 8601, or '' when the mail had no usable Date header. */
  sent_at: string;
  text_body: string;
  created_at: Timestamp;
}

export type ConnectorDispatchStatus = 'pending' | 'dispatched' | 'dropped';

export interface ConnectorDispatchesTable {
  id: string;
  event_id: string;
  binding_id: string;
  status: Defaulted<ConnectorDispatchStatus>;
  lease_token_hash: string | null;
  lease_expires_at: Date | null;
  lease_deployment_id: string | null;
  run_id: string | null;
  attempts: Defaulted<number>;
  last_outcome: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ChanAOfficialAccountsTable {
  client_id: string;
  app_id: string;
  app_secret_sealed: string;
  safe_domains: ColumnType<string[], string | undefined, string>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface HwOrderItemsTable {
  id: string;
  order_id: string;
  sku: string;
  tier_code: string;
  title: string;
  quantity: Defaulted<number>;
  list_price_cents: number;
}

export interface HwCodeRedemptionsTable {
  id: string;
  code_id: string;
  order_id: string;
  user_id: string;
  phone: string | null;
  status: Defaulted<'held' | 'used' | 'released'>;
  created_at: Timestamp;
  released_at: NullableTimestamp;
}

export interface HwPaymentEventsTable {
  id: Generated<number>;
  provider: string;
  event_id: string;
  event_type: string;
  payment_no: string | null;
  refund_no: string | null;
  resource: JsonObject;
  received_at: Timestamp;
}

export interface HwRefundsTable {
  id: string;
  refund_no: string;
  order_id: string;
  amount_cents: number;
  status: Defaulted<HwRefundStatus>;
  reason: string | null;
  channel_refund_id: string | null;
  created_at: Timestamp;
  completed_at: NullableTimestamp;
}

export interface HwEntitlementsTable {
  id: string;
  order_id: string;
  user_id: string;
  sku: string;
  tier_code: string;
  status: Defaulted<'active' | 'reclaimed'>;
  created_at: Timestamp;
  reclaimed_at: NullableTimestamp;
}

export interface HwOrderEventsTable {
  id: Generated<number>;
  order_id: string;
  type: string;
  source: HwEventSource;
  user_visible: Defaulted<boolean>;
  detail: JsonObject;
  created_at: Timestamp;
}

export interface PhoneOtpsTable {
  id: string;
  phone: string;
  purpose: 'login' | 'bind';
  code_hash: string;
  attempts: Defaulted<number>;
  requester_ip: string | null;
  expires_at: Timestamp;
  consumed_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface PhoneTokensTable {
  token_hash: string;
  phone: string;
  user_id: string;
  expires_at: Timestamp;
  created_at: Timestamp;
}

export interface SmsOutboxTable {
  id: Generated<number>;
  phone: string;
  body: string;
  created_at: Timestamp;
}

/** Project graph memory (docs/project-graph.md). */
export type GraphJobStatus = 'queued' | 'running' | 'completed' | 'failed';
export type GraphGenerationStatus = 'building' | 'active' | 'retired';
export type GraphSourceTable = 'documents' | 'deployments' | 'files';

export interface GraphJobsTable {
  id: string;
  project_id: string;
  kind: 'ingest' | 'build';
  status: Defaulted<GraphJobStatus>;
  input: Json;
  result: ColumnType<unknown, string | null | undefined, string | null>;
  error: string | null;
  created_by: string | null;
  created_at: Timestamp;
  started_at: NullableTimestamp;
  finished_at: NullableTimestamp;
}

export interface GraphGenerationsTable {
  id: string;
  project_id: string;
  status: Defaulted<GraphGenerationStatus>;
  build_key: string;
  sources: Defaulted<number>;
  facts: Defaulted<number>;
  created_at: Timestamp;
  activated_at: NullableTimestamp;
  retired_at: NullableTimestamp;
  /** The model that embedded the generation's facts; null: none (migration 0020). */
  embedding_model: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface GraphEpisodesTable {
  id: string;
  project_id: string;
  generation_id: string | null;
  job_id: string | null;
  name: string;
  content: string;
  extractor: string;
  created_at: Timestamp;
}

export interface GraphEntitiesTable {
  id: string;
  project_id: string;
  generation_id: string | null;
  episode_id: string;
  name: string;
  kind: string;
  created_at: Timestamp;
}

export interface GraphFactsTable {
  id: string;
  project_id: string;
  generation_id: string | null;
  episode_id: string;
  source_entity_id: string | null;
  target_entity_id: string | null;
  relation: string;
  fact: string;
  /** Generated from `fact`: never written. */
  search: ColumnType<string, never, never>;
  valid_at: Timestamp;
  invalid_at: NullableTimestamp;
  created_at: Timestamp;
  expired_at: NullableTimestamp;
  embedding: number[] | null;
}

export interface GraphArtifactsTable {
  id: string;
  generation_id: string;
  source_type: 'database' | 'file';
  source_table: GraphSourceTable;
  source_id: string;
  source_version_id: string;
  locator: Json;
}

export interface GraphFactContributionsTable {
  fact_id: string;
  artifact_id: string;
  contribution: string;
}

// Billing relations of the data API (migration 0022) and its storage objects (migration 0027).
export type SubscriptionStatus = 'active' | 'canceled' | 'past_due';

export interface SubscriptionsTable {
  id: Generated<string>;
  team_id: string;
  plan_code: string;
  status: Defaulted<SubscriptionStatus>;
  current_period_start: Timestamp;
  current_period_end: Timestamp;
  cancel_at_period_end: Defaulted<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface BillingRulesTable {
  id: Generated<string>;
  rule_key: string;
  value: Json;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: NullableTimestamp;
}

/** numeric columns arrive as strings (pg keeps their precision). */
export interface ModelProviderCostsTable {
  id: Generated<string>;
  provider: string;
  model: string;
  input_cost_per_mtok: ColumnType<string, string | number, string | number>;
  output_cost_per_mtok: ColumnType<string, string | number, string | number>;
  currency: Defaulted<string>;
  updated_at: Timestamp;
}

// The data API's own relations (migration 0023).
export interface AuditLogsTable {
  id: Generated<string>;
  team_id: string;
  actor_id: string;
  action: string;
  target_type: string | null;
  target_id: string | null;
  metadata: ColumnType<Record<string, unknown>, string | undefined, string>;
  created_at: Timestamp;
}

export interface RompMessagesTable {
  id: Generated<string>;
  binding_id: string;
  sender_user_id: string;
  body: string;
  created_at: Timestamp;
}

export interface AssetsSessionsTable {
  id: Generated<string>;
  team_id: string;
  project_id: string;
  status: Defaulted<string>;
  created_by: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface AssetsItemsTable {
  id: Generated<string>;
  session_id: string;
  team_id: Defaulted<string>;
  project_id: Defaulted<string>;
  file_id: string | null;
  status: Defaulted<string>;
  created_by: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface StorageObjectsTable {
  id: string;
  bucket_id: string;
  name: string;
  owner_id: string;
  storage_key: string;
  content_type: string;
  cache_control: string;
  size: number;
  sha256: string;
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
  team_outbound_webhook_secrets: TeamOutboundWebhookSecretsTable;
  run_callback_deliveries: RunCallbackDeliveriesTable;
  run_approvals: RunApprovalsTable;
  workflow_starts: WorkflowStartsTable;
  hw_skus: HwSkusTable;
  hw_tiers: HwTiersTable;
  hw_discount_codes: HwDiscountCodesTable;
  hw_orders: HwOrdersTable;
  chan_a_official_accounts: ChanAOfficialAccountsTable;
  hw_order_items: HwOrderItemsTable;
  hw_code_redemptions: HwCodeRedemptionsTable;
  hw_payment_events: HwPaymentEventsTable;
  hw_refunds: HwRefundsTable;
  hw_entitlements: HwEntitlementsTable;
  hw_order_events: HwOrderEventsTable;
  phone_otps: PhoneOtpsTable;
  phone_tokens: PhoneTokensTable;
  sms_outbox: SmsOutboxTable;
  board_assets: BoardAssetsTable;
  firmware_files: FirmwareFilesTable;
  bluetooth_filters: BluetoothFiltersTable;
  billing_prices: BillingPricesTable;
  billing_payment_methods: BillingPaymentMethodsTable;
  billing_orders: BillingOrdersTable;
  billing_payment_events: BillingPaymentEventsTable;
  graph_jobs: GraphJobsTable;
  graph_generations: GraphGenerationsTable;
  graph_episodes: GraphEpisodesTable;
  graph_entities: GraphEntitiesTable;
  graph_facts: GraphFactsTable;
  graph_artifacts: GraphArtifactsTable;
  graph_fact_contributions: GraphFactContributionsTable;
  connectors: ConnectorsTable;
  connector_connections: ConnectorConnectionsTable;
  connector_bindings: ConnectorBindingsTable;
  connector_poll_cursors: ConnectorPollCursorsTable;
  connector_events: ConnectorEventsTable;
  connector_dispatches: ConnectorDispatchesTable;
  subscriptions: SubscriptionsTable;
  billing_rules: BillingRulesTable;
  model_provider_costs: ModelProviderCostsTable;
  audit_logs: AuditLogsTable;
  romp_messages: RompMessagesTable;
  assets_sessions: AssetsSessionsTable;
  assets_items: AssetsItemsTable;
  storage_objects: StorageObjectsTable;
}

export type User = Selectable<UsersTable>;
export type Team = Selectable<TeamsTable>;
export type NewTeam = Insertable<TeamsTable>;
export type TeamUpdate = Updateable<TeamsTable>;
export type Project = Selectable<ProjectsTable>;
export type ApiKey = Selectable<ApiKeysTable>;
export type { Generated };
