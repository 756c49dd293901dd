import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { insertRunEvents, listBlockChunks } from '../../shared/app-runs/run-events-repository.js';
import {
  LLM_IDLE_TIMEOUT_MS, LLM_REQUEST_TIMEOUT_MS, LlmError, streamChatCompletion, type ChatContentPart, type LlmUsage,
} from '../../shared/llm-providers/llm-client.js';
import { modelReadsPdf } from '../../shared/llm-providers/llm-files.js';
import { createFileStore, type FileStore } from '../../shared/storage/index.js';
import { llmFileParts } from './llm-files.js';
import { SsrfBlockedError, InvalidUrlError, HostResolutionError, parseAllowList, vetUrl, type VettedTarget } from '../../shared/outbound-http/ssrf-guard.js';
import { chatCompletionsUrl } from '../../shared/llm-providers/llm-client.js';
import type { Claim } from '../../shared/app-runs/claims.js';
import type { ClaimedIoRequest, LlmBlockRequest, LlmBlockResult } from '../../shared/app-runs/contracts.js';
import type { Database } from '../../shared/db/client.js';
import type { SiteSettingsCache } from '../../shared/site-settings/cache.js';
import { LlmProviderNotConfiguredError, resolveRunLlmProvider } from '../../shared/llm-providers/service.js';
import { SealedSecretError, type SecretKeyRing } from '../../shared/secrets/key-ring.js';
import { chargeLlmTokens } from '../../shared/billing/llm-charges.js';
import { currentBillingRules } from '../../shared/billing/billing-rules.js';
import { llmTokenCostMilli } from '../../shared/billing/pricing.js';
import { countTokens } from '../../shared/llm-providers/tokens.js';
import { resolveSiteSetting } from '../../shared/site-settings/schemas.js';
import { resolveIoRequest, storeClaim } from './claim-store.js';

export interface LlmBlockDeps {
  db: Database;
  /** DATA_DIR: where uploaded files are (file handles in `files`), unless `store` is given. */
  config: { LLM_BASE_URL?: string; LLM_API_KEY?: string; DATA_DIR?: string };
  /** The uploaded files' store; defaults to the local-disk store under DATA_DIR/files. */
  store?: FileStore;
  /** Opens the team provider keys of `team_llm_providers`. */
  secrets: SecretKeyRing;
  /**
   * `http_block.allow_hosts`: the SSRF guard's allow list, also for team provider URLs; and
   * `billing.rules`, the token prices; `llm_block.pdf_support`, which models read PDFs. Without it
   * (some tests) the defaults apply.
   */
  settings?: Pick<SiteSettingsCache, 'get'>;
  /** Production defaults; tests shorten them. */
  options?: {
    /** Whole request. Default 120 s. */
    requestTimeoutMs?: number;
    /** No byte from the provider for this long fails the attempt. Default 30 s. */
    idleTimeoutMs?: number;
    /** Streamed text is written as one `block_chunk` at least this often… Default 50 ms. */
    flushIntervalMs?: number;
    /** …or as soon as this many bytes are waiting. Default 1024. */
    flushBytes?: number;
  };
}

export const NO_LLM_PROVIDER = 'No LLM provider is configured (set LLM_BASE_URL)';

/**
 * The `llm` block: one streamed chat completion against the run's provider: the paying team's
 * `team_llm_providers` row named by the block's `provider` (or `default`), else, for blocks without
 * a named provider, the environment's (LLM_BASE_URL, LLM_API_KEY; docs/llm-providers.md). Deltas
 * reach the run's event log as batched `block_chunk` events keyed `<blockId>:chunk:<seq>`; every chunk is written before the activity returns, so the workflow's
 * `block_complete` follows them. Heartbeats as data arrives (the workflow sets a heartbeatTimeout)
 * and aborts the request when Temporal cancels the activity.
 *
 * Failures: provider 4xx → non-retryable `LlmRequestRejected` (408/429 excepted); 5xx, network,
 * timeouts → plain Error (retried). Messages never contain the API key.
 *
 * Once the stream has finished, the block's tokens are charged to the paying team (docs/billing.md);
 * a failed or cancelled attempt charges nothing.
 */
export function createLlmBlockActivities(deps: LlmBlockDeps) {
  const { db, config, secrets } = deps;

  /**
   * A team's provider URL is the team's input, so it goes through the SSRF guard like an `http`
   * block (and the connection is pinned to the vetted addresses); the operator's LLM_BASE_URL does not.
   */
  async function vetTeamProvider(baseUrl: string): Promise<VettedTarget['addresses']> {
    const rules = parseAllowList(deps.settings ? await deps.settings.get('http_block.allow_hosts') : []);
    try {
      return (await vetUrl(chatCompletionsUrl(baseUrl), rules)).addresses;
    } catch (error) {
      if (error instanceof SsrfBlockedError || error instanceof InvalidUrlError) {
        throw ApplicationFailure.nonRetryable(`LLM provider refused: ${error.message}`, 'LlmProviderRefused');
      }
      if (error instanceof HostResolutionError) throw new Error(`LLM provider unreachable: ${error.message}`, { cause: error });
      throw error;
    }
  }

  /** The paying team's provider for the block, or null for the environment's; the key stays in this activity. */
  async function teamProviderFor(input: LlmBlockRequest): Promise<{ baseUrl: string; apiKey: string } | null> {
    try {
      return await resolveRunLlmProvider(db, secrets, input.runId, input.provider);
    } catch (error) {
      if (error instanceof LlmProviderNotConfiguredError) throw ApplicationFailure.nonRetryable(error.message, 'LlmProviderNotConfigured');
      if (error instanceof SealedSecretError) {
        throw ApplicationFailure.nonRetryable(`LLM provider '${input.provider ?? 'default'}' key cannot be decrypted: ${error.message}`, 'LlmProviderKeyUnreadable');
      }
      throw error; // the database: retried
    }
  }

  /** Base URL and key for this attempt, read fresh each time (a PUT applies to the next run). */
  async function providerFor(input: LlmBlockRequest): Promise<{ baseUrl: string; apiKey?: string; pinnedTo?: VettedTarget['addresses'] }> {
    const team = await teamProviderFor(input);
    if (team) return { ...team, pinnedTo: await vetTeamProvider(team.baseUrl) };
    if (!config.LLM_BASE_URL) throw ApplicationFailure.nonRetryable(NO_LLM_PROVIDER, 'LlmNotConfigured');
    return { baseUrl: config.LLM_BASE_URL, apiKey: config.LLM_API_KEY };
  }
  const requestTimeoutMs = deps.options?.requestTimeoutMs ?? LLM_REQUEST_TIMEOUT_MS;
  const idleTimeoutMs = deps.options?.idleTimeoutMs ?? LLM_IDLE_TIMEOUT_MS;
  const flushIntervalMs = deps.options?.flushIntervalMs ?? 50;
  const flushBytes = deps.options?.flushBytes ?? 1024;
  let store = deps.store;
  const fileStore = (): FileStore => {
    if (store) return store;
    if (!config.DATA_DIR) throw ApplicationFailure.nonRetryable('file handles cannot be read: no file store is configured', 'LlmFileRejected');
    return (store = createFileStore({ DATA_DIR: config.DATA_DIR }));
  };

  /** The block's files as content parts (none without `files`); a PDF only to a model `llm_block.pdf_support` says reads PDFs. */
  async function filePartsFor(input: LlmBlockRequest, baseUrl: string): Promise<ChatContentPart[]> {
    if (!input.files?.length) return [];
    const rules = deps.settings ? await deps.settings.get('llm_block.pdf_support') : resolveSiteSetting('llm_block.pdf_support', undefined);
    const readsPdf = modelReadsPdf(rules, { providerHost: providerHost(baseUrl), model: input.model });
    return llmFileParts({ db, store: fileStore }, { runId: input.runId, files: input.files }, readsPdf);
  }

  return {
    /** A claimed request is resolved first; a result over the claim threshold is returned as a claim (`output:<blockId>`). */
    async runLlmBlock(request: LlmBlockRequest | ClaimedIoRequest): Promise<LlmBlockResult | Claim> {
      const input = await resolveIoRequest(db, request);
      const provider = await providerFor(input);
      const parts = await filePartsFor(input, provider.baseUrl);
      const context = activityContext();
      const heartbeat = () => { context?.heartbeat(); };
      // A retry finds the earlier attempts' chunks in the log: it streams on after them, or not at all.
      const earlier = await streamedChunks(db, input.runId, input.blockId);
      const writer = new ChunkWriter(db, input.runId, input.blockId, { intervalMs: flushIntervalMs, maxBytes: flushBytes }, earlier.nextSeq);
      const stream = new ResumedStream(earlier.text, (delta) => writer.push(delta));
      heartbeat();
      let result: LlmBlockResult;
      try {
        result = await streamChatCompletion({
          baseUrl: provider.baseUrl,
          apiKey: provider.apiKey,
          pinnedTo: provider.pinnedTo,
          model: input.model,
          prompt: input.prompt,
          parts,
          system: input.system,
          temperature: input.temperature,
          maxTokens: input.maxTokens,
          timeoutMs: requestTimeoutMs,
          idleTimeoutMs,
          signal: context?.cancellationSignal,
        }, (delta) => {
          stream.push(delta);
          heartbeat();
        });
        await writer.close();
      } catch (error) {
        await writer.discard();
        if (error instanceof LlmError) {
          if (!error.retryable) throw ApplicationFailure.nonRetryable(error.message, 'LlmRequestRejected');
          // The provider's own failures get a fixed number of tries; the policy has no cap of its
          // own, so that a database outage or a worker restart never costs the block.
          if ((context?.info.attempt ?? 1) >= PROVIDER_ATTEMPTS) throw ApplicationFailure.nonRetryable(error.message, 'LlmProviderFailed');
          // An ordinary Error (Temporal reports its type as `LlmError`): retried by the activity's retry policy.
          throw error;
        }
        throw error;
      }
      // Outside the try: a failed charge (the database) is retried like any activity failure, not
      // mistaken for the provider's. A retry calls the provider again but charges once (llm-charges.ts).
      await chargeTokens(input, result, context, parts);
      return await storeClaim(db, input.runId, `output:${input.blockId}`, result);
    },
  };

  /**
   * Prices the completed block with `billing.rules` as they are now and books it. The provider's
   * usage when it reported one; otherwise our own count, logged as such, since the output keeps
   * `usage: null` (it says what the provider said).
   */
  async function chargeTokens(input: LlmBlockRequest, result: LlmBlockResult, context: Context | undefined, parts: ChatContentPart[]): Promise<void> {
    const reported = result.usage && isUsableUsage(result.usage) ? result.usage : null;
    const usage = reported ?? countUsage(input, result.text, parts);
    const rules = deps.settings ? await currentBillingRules({ db, settings: deps.settings }) : resolveSiteSetting('billing.rules', undefined);
    const costMilli = llmTokenCostMilli(rules, input.model, usage);
    const { charged } = await chargeLlmTokens(db, { runId: input.runId, blockId: input.blockId, model: input.model, usage, costMilli });
    context?.log.info('llm block tokens priced', {
      runId: input.runId, blockId: input.blockId, model: input.model, ...usage, usageSource: reported ? 'provider' : 'counted', costMilli, charged,
    });
  }
}

/**
 * Provider counts we can price: whole, non-negative numbers (toUsage passes through whatever was
 * sent), with a positive total. A real request always has prompt tokens, so a total of 0 means an
 * empty `usage: {}` rather than a count, and is not allowed to make the block free.
 */
function isUsableUsage(usage: LlmUsage): boolean {
  const whole = [usage.promptTokens, usage.completionTokens, usage.totalTokens].every((n) => Number.isSafeInteger(n) && n >= 0);
  return whole && usage.totalTokens > 0;
}

/**
 * Our count when the provider sent none: the text of the system and user messages and of the
 * completion (o200k_base), without the few tokens of chat framing a provider adds per message.
 * Of the files only their hint texts count: a file's base64 is not prompt text (what a provider
 * charges for a file is its own count, which we use whenever it reports one).
 */
export function countUsage(input: Pick<LlmBlockRequest, 'prompt' | 'system'>, completion: string, parts: ChatContentPart[] = []): LlmUsage {
  const partTokens = parts.reduce((sum, part) => sum + (part.type === 'text' ? countTokens(part.text) : 0), 0);
  const promptTokens = countTokens(input.prompt) + (input.system ? countTokens(input.system) : 0) + partTokens;
  const completionTokens = countTokens(completion);
  return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
}

export type LlmBlockActivities = ReturnType<typeof createLlmBlockActivities>;

/** The host name `llm_block.pdf_support`'s `provider` globs are matched against ('' for a base URL that does not parse). */
function providerHost(baseUrl: string): string {
  try {
    return new URL(baseUrl).hostname;
  } catch {
    return '';
  }
}

/** The activity's Context, or undefined when called outside Temporal (tests, scripts). */
/** Tries of one `llm` block against a provider that keeps failing (5xx, stalls, unreachable). */
export const PROVIDER_ATTEMPTS = 5;

function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

/** The block's chunks already in the run's log (earlier attempts): their text and the next free seq. */
async function streamedChunks(db: Database, runId: string, blockId: string): Promise<{ text: string; nextSeq: number }> {
  const chunks = await listBlockChunks(db, runId, blockId);
  const seqOf = (key: string) => Number(key.slice(key.lastIndexOf(':') + 1));
  return {
    text: chunks.map((chunk) => chunk.delta).join(''),
    nextSeq: chunks.reduce((next, chunk) => Math.max(next, seqOf(chunk.key) + 1), 0),
  };
}

/**
 * What a retried attempt streams. The earlier attempts' chunks are in the log and cannot be taken
 * back, and a new generation need not repeat them: the retry stays silent while its text repeats
 * what was streamed and streams only what comes after; once its text departs from it, it streams
 * nothing more (`block_complete` carries the whole text). So a block's chunks always read as the
 * start of one generation, never the start of one spliced onto the rest of another.
 */
export class ResumedStream {
  private generatedLength = 0;
  private diverged = false;

  constructor(private readonly streamed: string, private readonly emit: (delta: string) => void) {}

  push(delta: string): void {
    if (this.diverged || !delta) return;
    const start = this.generatedLength;
    this.generatedLength += delta.length;
    const repeated = Math.max(0, Math.min(delta.length, this.streamed.length - start));
    if (delta.slice(0, repeated) !== this.streamed.slice(start, start + repeated)) {
      this.diverged = true;
      return;
    }
    if (repeated < delta.length) this.emit(delta.slice(repeated));
  }
}

/**
 * Batches deltas into `block_chunk` events: a write when `maxBytes` are waiting or `intervalMs`
 * after the first waiting delta, whichever comes first. One write at a time, in order; text that
 * arrives during a write goes into the next one. A failed write is rethrown by the next `push` (which
 * aborts the LLM request) or by `close`.
 */
export class ChunkWriter {
  private pending = '';
  private pendingBytes = 0;
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private flushAgain = false;
  private failure: { error: unknown } | undefined;

  constructor(
    private readonly db: Database,
    private readonly runId: string,
    private readonly blockId: string,
    private readonly limits: { intervalMs: number; maxBytes: number },
    /** The first chunk's seq: after the chunks earlier attempts wrote. */
    firstSeq = 0,
  ) {
    this.seq = firstSeq;
  }

  push(delta: string): void {
    if (this.failure) throw this.failure.error;
    if (!delta) return;
    this.pending += delta;
    this.pendingBytes += Buffer.byteLength(delta);
    if (this.pendingBytes >= this.limits.maxBytes) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.limits.intervalMs);
  }

  /** Writes what is waiting and waits for every write; rethrows a failed write. */
  async close(): Promise<void> {
    this.flush();
    while (this.inFlight) await this.inFlight;
    if (this.failure) throw this.failure.error;
  }

  /** Drops what is waiting and waits for the write in progress, so nothing is written after the attempt ends. */
  async discard(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending = '';
    this.pendingBytes = 0;
    this.flushAgain = false;
    while (this.inFlight) await this.inFlight;
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.inFlight) {
      this.flushAgain = true;
      return;
    }
    if (!this.pending || this.failure) return;
    const delta = this.pending;
    const seq = this.seq++;
    this.pending = '';
    this.pendingBytes = 0;
    this.inFlight = insertRunEvents(this.db, this.runId, [{
      key: `${this.blockId}:chunk:${seq}`,
      event: { type: 'block_chunk', blockId: this.blockId, delta },
    }]).catch((error: unknown) => {
      this.failure ??= { error };
    }).finally(() => {
      this.inFlight = undefined;
      if (this.flushAgain) {
        this.flushAgain = false;
        // Text that arrived during the write: flush now if it is due, else when its timer fires.
        if (this.pendingBytes >= this.limits.maxBytes || !this.timer) this.flush();
      }
    });
  }
}
