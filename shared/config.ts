import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { decodeAes256Key } from './crypto.js';

/** Repository root, so `.data/` is found whatever the working directory. */
export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const optionalString = z.string().trim().min(1).optional().catch(undefined);
const AES_KEY_HINT = 'must be base64 of exactly 32 bytes (e.g. `openssl rand -base64 32`)';
/** Unset or empty → undefined; anything else must be an AES-256 key (no silent fallback for a typo). */
const optionalAesKey = z.string().trim().optional().transform((v) => v || undefined)
  .refine((v) => v === undefined || decodeAes256Key(v) !== null, AES_KEY_HINT);
/** Comma-separated AES-256 keys; every one must decode. */
const aesKeyList = z.string().optional().transform((v) => (v ?? '').split(',').map((k) => k.trim()).filter(Boolean))
  .refine((keys) => keys.every((k) => decodeAes256Key(k) !== null), `every comma-separated key ${AES_KEY_HINT}`);

/**
 * Every environment variable the service reads, in one place (the README's configuration table
 * mirrors this list). Values are validated once at start-up so a typo fails fast with its name.
 */
const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('127.0.0.1'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATA_DIR: z.string().default(path.join(projectRoot, '.data')),
  DATABASE_URL: optionalString,
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  TEMPORAL_ADDRESS: optionalString,
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_CLI_PATH: optionalString,
  /** Appended to every task queue name, so several deployments (or test files) can share a namespace. */
  TEMPORAL_TASK_QUEUE_SUFFIX: optionalString,
  TEMPORAL_UI_PORT: z.coerce.number().int().min(1).max(65535).default(8233),
  /** `npm start` runs the worker in its own process (`process`, restarted when it dies: for chaos tests) or in the API's (`inline`). */
  START_WORKER: z.enum(['inline', 'process']).default('inline'),
  WORKFLOW_BUNDLE_PATH: optionalString,
  /** How often the worker makes Temporal Schedules match the schedule rows (it also does so at start). */
  SCHEDULE_RECONCILE_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
  /** How often a worker makes the workflow starts recorded in the outbox that are due (shared/workflow-starts/). */
  WORKFLOW_DISPATCH_INTERVAL_MS: z.coerce.number().int().min(50).max(60_000).default(1_000),
  /** How often a worker looks for open runs that no workflow will end (shared/app-runs/run-reconciler.ts). */
  RUN_RECONCILE_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(3_600).default(30),
  /** Open runs younger than this are left to their workflow. */
  RUN_RECONCILE_MIN_AGE_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
  REDIS_URL: optionalString,
  BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).default(4 * 1024 * 1024),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
  /** Largest file `POST /storage/:projectId/upload` accepts (413 `file_too_large` above it); bytes live in DATA_DIR/files. */
  STORAGE_MAX_UPLOAD_BYTES: z.coerce.number().int().min(1).default(50 * 1024 * 1024),
  LLM_BASE_URL: optionalString,
  LLM_API_KEY: optionalString,
  /** Seals secrets at rest (per-team LLM provider keys): AES-256-GCM. Unset: a generated key in DATA_DIR, except in production. */
  SECRETS_KEY: optionalAesKey,
  /** Older SECRETS_KEY values, comma-separated, still accepted for opening (key rotation; docs/llm-providers.md). */
  SECRETS_KEY_PREVIOUS: aesKeyList,
  IDP_PRIVATE_JWK: optionalString,
  JWT_JWKS_URL: optionalString,
  JWT_SECRET: optionalString,
  JWT_ISSUER: z.string().default('workflow-app-service'),
  JWT_AUDIENCE: z.string().default('workflow-app-service'),
  /** Fallback for the site setting of the same name: the docs site's OAuth client id. */
  DOCS_AUTH_OAUTH_CLIENT_ID: optionalString,
  /** The service's public origin, used in the notify URLs sent to payment channels. */
  PUBLIC_BASE_URL: optionalString,
  /**
   * Where workers reach the API (the connector dispatcher's `POST /api/connector-triggers/dispatch`);
   * default `http://127.0.0.1:PORT` (`internalApiUrl`).
   */
  INTERNAL_API_URL: optionalString,
  /**
   * Which peers may set `X-Forwarded-For` / `-Host` / `-Proto` (Fastify's `trustProxy`): `loopback`,
   * a comma list of
   * addresses or CIDRs, `true` (any peer: only behind a proxy that overwrites them) or `false`.
   */
  TRUST_PROXY: z.string().trim().min(1).default('loopback'),
  /** The local object store of public downloads (board assets, firmware); default DATA_DIR/objects. */
  OBJECT_STORE_DIR: optionalString,
  /** The bounded, content-addressed cache board downloads are served from; default DATA_DIR/download-cache. */
  DOWNLOAD_CACHE_DIR: optionalString,
  DOWNLOAD_CACHE_MAX_BYTES: z.coerce.number().int().min(1).default(536_870_912),
  /** A read from the object store that yields no bytes for this long fails the fill with 504 (spec §8.2). */
  DOWNLOAD_STALL_TIMEOUT_MS: z.coerce.number().int().min(10).default(30_000),
  /** `dev` (the outbox of `sms outbox`; the default outside production) or a provider's name (docs/sms-provider.md). */
  SMS_PROVIDER: optionalString,
  // chan_a (WeChat Pay API v3): the channel is configured when the merchant variables are all set
  // (shared/payment-channels/chan-a/config.ts); the base URLs default to the channel's own.
  CHAN_A_API_BASE_URL: z.string().url().default('https://api.mch.weixin.qq.com'),
  CHAN_A_OPEN_BASE_URL: z.string().url().default('https://api.weixin.qq.com'),
  CHAN_A_MCH_ID: optionalString,
  CHAN_A_APP_ID: optionalString,
  CHAN_A_MERCHANT_SERIAL: optionalString,
  CHAN_A_MERCHANT_PRIVATE_KEY: optionalString,
  CHAN_A_API_V3_KEY: optionalString,
  CHAN_A_PLATFORM_PUBLIC_KEY: optionalString,
  CHAN_A_PLATFORM_PUBLIC_KEY_ID: optionalString,
  // chan_b (Alipay open platform, RSA2): configured when the app id and both keys are set.
  CHAN_B_GATEWAY_URL: z.string().url().default('https://openapi.alipay.com/gateway.do'),
  CHAN_B_APP_ID: optionalString,
  CHAN_B_APP_PRIVATE_KEY: optionalString,
  CHAN_B_PUBLIC_KEY: optionalString,
  // paddle (Paddle Billing): webhooks verified with the secret; checkout creates transactions through the API.
  PADDLE_WEBHOOK_SECRET: optionalString,
  PADDLE_API_BASE_URL: z.string().url().default('https://api.paddle.com'),
  PADDLE_API_KEY: optionalString,
  /** The HMAC secret of `manual` and `mock` callbacks (Standard Webhooks; `whsec_…` is base64). */
  PAYMENT_WEBHOOK_SECRET: optionalString,
});

export type Config = z.infer<typeof envSchema>;

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  return parsed.data;
}

/** The production entries (`npm run api`, `npm run worker`) refuse to guess where their engines are. */
export function requireProductionTargets(config: Config): { databaseUrl: string; temporalAddress: string } {
  const missing = [
    config.DATABASE_URL ? null : 'DATABASE_URL',
    config.TEMPORAL_ADDRESS ? null : 'TEMPORAL_ADDRESS',
  ].filter((name): name is string => name !== null);
  if (missing.length > 0) {
    throw new ConfigError(`${missing.join(' and ')} must be set (use \`npm start\` for the embedded development stack)`);
  }
  return { databaseUrl: config.DATABASE_URL!, temporalAddress: config.TEMPORAL_ADDRESS! };
}

/**
 * Entry points' start: validated config plus both targets, or the configuration problem on stderr
 * (a mistake needs its message, not a stack trace) and exit code 2.
 */
export function loadProductionConfigOrExit(): { config: Config; targets: { databaseUrl: string; temporalAddress: string } } {
  try {
    const config = loadConfig();
    return { config, targets: requireProductionTargets(config) };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    process.exit(2);
  }
}

/** The API as the service's own workers call it: INTERNAL_API_URL, else this machine's PORT. */
export function internalApiUrl(config: Pick<Config, 'INTERNAL_API_URL' | 'PORT'>): string {
  return (config.INTERNAL_API_URL ?? `http://127.0.0.1:${config.PORT}`).replace(/\/+$/, '');
}
