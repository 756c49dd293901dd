import { z } from 'zod';

/**
 * Known site settings (CONTRACTS.md): each has a schema and the default used when the row is
 * missing or invalid. An invalid value never means "no limit".
 */
const scheduleQuota = z.object({ maxEnabled: z.number().int().min(0), minIntervalSeconds: z.number().int().min(1) });

export const siteSettingDefinitions = {
  'run.input_limit': {
    schema: z.object({
      maxBodyBytes: z.number().int().positive(),
      maxFieldBytes: z.number().int().positive(),
      maxInlineBase64Bytes: z.number().int().positive(),
      maxTextBytes: z.number().int().positive(),
      maxTextTokens: z.number().int().positive(),
      maxDepth: z.number().int().positive(),
      maxNodes: z.number().int().positive(),
    }).partial(),
    defaults: {
      maxBodyBytes: 4_194_304, maxFieldBytes: 1_048_576, maxInlineBase64Bytes: 1_048_576,
      maxTextBytes: 1_048_576, maxTextTokens: 200_000, maxDepth: 32, maxNodes: 100_000,
    },
  },
  'run.response_limit': {
    schema: z.object({ maxBytes: z.number().int().positive() }).partial(),
    defaults: { maxBytes: 8_388_608 },
  },
  'run.max_timeout_seconds': { schema: z.number().int().positive(), defaults: 300 },
  /** Long runs (CONTRACTS.md "Long runs"): the longest `wait`, and an `approval`'s default and longest timeout. */
  'runs.max_wait_seconds': { schema: z.number().int().positive(), defaults: 2_592_000 },
  /** Runs of one team waiting at once; a run that would wait beyond it fails with `too_many_waiting_runs`. */
  'runs.max_waiting_per_team': { schema: z.number().int().min(0), defaults: 1000 },
  /** A run stream without a terminal event is closed after this many seconds (the client resumes with the last event id). */
  'runs.stream_idle_close_seconds': { schema: z.number().int().positive(), defaults: 300 },
  'webhook_trigger.rate_limit': {
    schema: z.object({ perMinute: z.number().int().positive() }).partial(),
    defaults: { perMinute: 60 },
  },
  'team.quota_limits.schedules': {
    schema: z.record(z.string(), scheduleQuota),
    defaults: {
      default: { maxEnabled: 3, minIntervalSeconds: 300 },
      free: { maxEnabled: 3, minIntervalSeconds: 300 },
      pro: { maxEnabled: 20, minIntervalSeconds: 60 },
      business: { maxEnabled: 100, minIntervalSeconds: 60 },
      infrastructure: { maxEnabled: 100, minIntervalSeconds: 60 },
    },
  },
  /** `timeout_ms` of a schedule created without one (spec §2.1 "site-wide setting"). */
  'schedule.default_timeout_ms': { schema: z.number().int().min(1000).max(3_600_000), defaults: 300_000 },
  'http_block.allow_hosts': { schema: z.array(z.string().min(1)), defaults: [] as string[] },
  /**
   * Prices in milli-credits (docs/billing.md): the base cost of a run, and the per-1k-token price of
   * `llm` blocks, by model name with a default for models not listed. No longer stored as a site
   * setting: this is the schema of the `billing_rules` rows (one row a key, shared/billing/
   * billing-rules.ts), which `settings set --key billing.rules` writes.
   */
  'billing.rules': {
    schema: z.object({
      runBaseMilli: z.number().int().min(0),
      llmPer1kTokensMilli: z.number().int().min(0),
      llmModelPer1kTokensMilli: z.record(z.string().min(1), z.number().int().min(0)),
    }).partial(),
    defaults: { runBaseMilli: 10, llmPer1kTokensMilli: 20, llmModelPer1kTokensMilli: {} as Record<string, number> },
  },
  /**
   * Which models read PDFs an `llm` block passes natively (`files`, docs/app-runs.md): the first rule
   * whose `model` glob (and `provider` glob, matched against the provider base URL's host name)
   * matches decides; a model no rule matches gets a hint text in place of each PDF.
   */
  'llm_block.pdf_support': {
    schema: z.array(z.object({ provider: z.string().min(1).optional(), model: z.string().min(1), pdf: z.boolean() }).strict()).max(200),
    defaults: [
      { model: 'gpt-4o*', pdf: true }, { model: 'gpt-4.1*', pdf: true }, { model: 'gpt-5*', pdf: true },
    ] as Array<{ provider?: string; model: string; pdf: boolean }>,
  },
  /** Hardware sales (CONTRACTS.md "Hardware sales"): an unpaid order expires after this. */
  'hardware_sales.order_ttl_seconds': { schema: z.number().int().min(1).max(7 * 86_400), defaults: 1800 },
  'hardware_sales.rate_limits': {
    schema: z.object({
      quotePerMinute: z.number().int().positive(),
      configPerMinute: z.number().int().positive(),
      orderPerMinute: z.number().int().positive(),
      payPerMinute: z.number().int().positive(),
      lookupPerMinute: z.number().int().positive(),
      otpIpPerHour: z.number().int().positive(),
      otpPhoneCooldownSeconds: z.number().int().min(1),
      otpMaxAttempts: z.number().int().positive(),
    }).partial(),
    defaults: {
      quotePerMinute: 10, configPerMinute: 120, orderPerMinute: 10, payPerMinute: 10, lookupPerMinute: 10,
      otpIpPerHour: 20, otpPhoneCooldownSeconds: 60, otpMaxAttempts: 5,
    },
  },
  'hardware_sales.otp_ttl_seconds': { schema: z.number().int().min(30).max(3600), defaults: 300 },
  'hardware_sales.phone_token_ttl_seconds': { schema: z.number().int().min(30).max(86_400), defaults: 900 },
  /** How long after delivery the order's saga still takes a refund (docs/hardware-sales.md): seven days, the statutory return window. */
  'hardware_sales.refund_window_seconds': { schema: z.number().int().min(0).max(90 * 86_400), defaults: 7 * 86_400 },
  /** Public configuration (CONTRACTS.md "Public configuration"): how long a firmware signed URL lives. */
  'public.firmware_url_ttl_seconds': { schema: z.number().int().min(1).max(86_400), defaults: 300 },
  /** `GET /public/chan_a/jssdk-signature` calls per IP per minute. */
  'public.jssdk_rate_limit': { schema: z.object({ perMinute: z.number().int().positive() }).partial(), defaults: { perMinute: 60 } },
  /** What `GET /public/features/graph` shows: whether the graph feature is open, and its public label. */
  'graph.public': {
    schema: z.object({ open: z.boolean(), label: z.string().max(200).nullable() }).partial(),
    defaults: { open: false, label: null as string | null },
  },
  /**
   * Project graph (CONTRACTS.md "Project graph"): off by default, and every graph endpoint then
   * answers 503. `extractor: llm` needs a `model` (and LLM_BASE_URL) to count as configured.
   * `embeddingModel` (optional, with LLM_BASE_URL): facts are embedded and search ranks by them too.
   */
  'graph.config': {
    schema: z.object({
      enabled: z.boolean(), extractor: z.enum(['builtin', 'llm']), model: z.string().min(1).max(200), embeddingModel: z.string().min(1).max(200),
    }).partial(),
    defaults: { enabled: false, extractor: 'builtin' as 'builtin' | 'llm', model: undefined as string | undefined, embeddingModel: undefined as string | undefined },
  },
  DOCS_AUTH_OAUTH_CLIENT_ID: { schema: z.string().min(1), defaults: '' },
  /** Connectors (CONTRACTS.md "Connectors"): the default polling interval of a binding. */
  'connectors.poll_seconds': { schema: z.number().int().min(1).max(86_400), defaults: 60 },
  CONNECTOR_TEST_RATE_LIMIT_PER_MINUTE: { schema: z.number().int().positive(), defaults: 10 },
  /** Runs one connector binding may start per minute (dispatch answers 429 above it; the dispatcher waits and retries). */
  CONNECTOR_DISPATCH_RATE_LIMIT_PER_MINUTE: { schema: z.number().int().positive(), defaults: 600 },
} as const;

export type SiteSettingKey = keyof typeof siteSettingDefinitions;

type Definition = (typeof siteSettingDefinitions)[SiteSettingKey];
type Widen<T> = T extends number ? number : T extends string ? string : T extends readonly (infer U)[] ? Widen<U>[] : T extends object ? { [K in keyof T]: Widen<T[K]> } : T;
export type SiteSettingValue<K extends SiteSettingKey> = Widen<(typeof siteSettingDefinitions)[K]['defaults']>;

export const isKnownSiteSetting = (key: string): key is SiteSettingKey => key in siteSettingDefinitions;

/**
 * The effective value of a setting: a stored object is merged over the defaults (so any subset
 * works); anything that fails validation yields the defaults and reports why.
 */
export function resolveSiteSetting<K extends SiteSettingKey>(
  key: K,
  stored: unknown,
  onInvalid: (key: K, reason: string) => void = () => {},
): SiteSettingValue<K> {
  const definition: Definition = siteSettingDefinitions[key];
  const defaults = definition.defaults as SiteSettingValue<K>;
  if (stored === undefined) return defaults;
  const parsed = definition.schema.safeParse(stored);
  if (!parsed.success) {
    onInvalid(key, parsed.error.issues.map((i) => `${i.path.join('.') || '(value)'}: ${i.message}`).join('; '));
    return defaults;
  }
  const value = parsed.data;
  const isPlainObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (isPlainObject(value) && isPlainObject(defaults)) {
    return { ...(defaults as object), ...(value as object) } as SiteSettingValue<K>;
  }
  return value as SiteSettingValue<K>;
}
