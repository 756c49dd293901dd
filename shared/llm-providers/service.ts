import { requireTeamRole } from '../access/service.js';
import { AppError, notFound } from '../errors.js';
import type { Database } from '../db/client.js';
import type { SecretKeyRing } from '../secrets/key-ring.js';
import {
  deleteLlmProvider, findRunLlmProvider, listLlmProviders, upsertLlmProvider, type LlmProviderRow,
} from './repository.js';

/** `provider` of an `llm` block (and the path segment of the routes). */
export const LLM_PROVIDER_NAME = /^[a-z0-9][a-z0-9_-]{0,39}$/;
/** The team's provider for blocks without `provider`; without such a row they use LLM_BASE_URL/LLM_API_KEY. */
export const DEFAULT_LLM_PROVIDER = 'default';
const ADMIN_ROLES = ['owner', 'admin'] as const;
const PREVIEW_CHARS = 4;
/** Shorter keys get no preview: 4 characters of a short key is too much of it. */
const PREVIEW_MIN_LENGTH = 12;

/** Authenticated data of a sealed key: a value copied into another team's or provider's row does not open. */
const sealContext = (teamId: string, name: string) => `team_llm_providers:${teamId}:${name}`;

export interface LlmProviderView {
  name: string;
  baseUrl: string;
  /** Every row holds a (sealed) key; the field is there so clients need not assume it. */
  hasApiKey: boolean;
  /** Last 4 characters of the key, null for keys under 12 characters (the whole key is never returned). */
  apiKeyPreview: string | null;
  updatedAt: string;
}

export const toLlmProviderView = (row: LlmProviderRow): LlmProviderView => ({
  name: row.name, baseUrl: row.base_url, hasApiKey: true, apiKeyPreview: row.api_key_preview, updatedAt: row.updated_at.toISOString(),
});

/** Creates or replaces a provider of the team (owner or admin). The key is sealed before it reaches the database. */
export async function putLlmProvider(
  db: Database, secrets: SecretKeyRing, userId: string, teamId: string, name: string, body: { baseUrl: string; apiKey: string },
): Promise<LlmProviderRow> {
  await requireTeamRole(db, teamId, userId, ADMIN_ROLES, 'manage LLM providers');
  if (!secrets.currentKeyId) {
    throw new AppError(503, 'secrets_key_missing', 'SECRETS_KEY is not configured on this server, so provider keys cannot be stored; ask the operator to set it');
  }
  return upsertLlmProvider(db, {
    teamId, name, baseUrl: body.baseUrl, createdBy: userId,
    apiKeySealed: secrets.seal(body.apiKey, sealContext(teamId, name)),
    apiKeyPreview: body.apiKey.length >= PREVIEW_MIN_LENGTH ? body.apiKey.slice(-PREVIEW_CHARS) : null,
  });
}

export async function listTeamLlmProviders(db: Database, userId: string, teamId: string): Promise<LlmProviderRow[]> {
  await requireTeamRole(db, teamId, userId, ADMIN_ROLES, 'manage LLM providers');
  return listLlmProviders(db, teamId);
}

export async function removeLlmProvider(db: Database, userId: string, teamId: string, name: string): Promise<void> {
  await requireTeamRole(db, teamId, userId, ADMIN_ROLES, 'manage LLM providers');
  if (!(await deleteLlmProvider(db, teamId, name))) throw notFound('LLM provider');
}

/** A named provider the run's team has not configured (a `default` that is missing falls back to the environment instead). */
export class LlmProviderNotConfiguredError extends Error {
  constructor(readonly provider: string) {
    super(`LLM provider '${provider}' is not configured for this team`);
    this.name = 'LlmProviderNotConfiguredError';
  }
}

/**
 * Where a run's `llm` block sends its request: the paying team's row for `provider` (or `default`),
 * with its key opened here; null means "use the environment" (no `provider`, or `default`, and the
 * team has no default row). Throws LlmProviderNotConfiguredError for a named provider without a row,
 * and SealedSecretError when the key does not open (e.g. its key was dropped from the ring).
 */
export async function resolveRunLlmProvider(
  db: Database, secrets: SecretKeyRing, runId: string, provider: string | undefined,
): Promise<{ baseUrl: string; apiKey: string } | null> {
  const name = provider ?? DEFAULT_LLM_PROVIDER;
  const found = LLM_PROVIDER_NAME.test(name) ? await findRunLlmProvider(db, runId, name) : null;
  if (found?.provider) {
    return { baseUrl: found.provider.base_url, apiKey: secrets.open(found.provider.api_key_sealed, sealContext(found.teamId, name)) };
  }
  if (name === DEFAULT_LLM_PROVIDER) return null;
  throw new LlmProviderNotConfiguredError(name);
}
