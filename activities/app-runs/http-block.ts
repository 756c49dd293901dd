import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Claim } from '../../shared/app-runs/claims.js';
import type { ClaimedIoRequest, HttpBlockRequest, HttpBlockResult } from '../../shared/app-runs/contracts.js';
import { HttpRequestError, performHttpRequest } from '../../shared/outbound-http/safe-http-client.js';
import { HostResolutionError, InvalidUrlError, SsrfBlockedError, parseAllowList } from '../../shared/outbound-http/ssrf-guard.js';
import type { Database } from '../../shared/db/client.js';
import type { SiteSettingsCache } from '../../shared/site-settings/cache.js';
import { resolveIoRequest, storeClaim } from './claim-store.js';

const USER_AGENT = 'workflow-app-service http block';

/** The Temporal failure for an error of `performHttpRequest` (messages are safe to show). */
export function toActivityFailure(error: unknown): unknown {
  if (error instanceof SsrfBlockedError) return ApplicationFailure.nonRetryable(error.message, 'SsrfBlocked');
  if (error instanceof InvalidUrlError) return ApplicationFailure.nonRetryable(error.message, 'InvalidUrl');
  if (error instanceof HostResolutionError) {
    return error.code === 'ENOTFOUND' || error.code === 'ENODATA'
      ? ApplicationFailure.nonRetryable(error.message, 'HostNotFound')
      : ApplicationFailure.retryable(error.message, 'HostResolution');
  }
  if (error instanceof HttpRequestError) {
    return error.retryable ? ApplicationFailure.retryable(error.message, error.type) : ApplicationFailure.nonRetryable(error.message, error.type);
  }
  return error; // cancellation and the unexpected pass through unchanged
}

function activityCancellationSignal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined; // called outside an activity (tests)
  }
}

export function createHttpBlockActivities(deps: { db: Database; settings: Pick<SiteSettingsCache, 'get'> }) {
  return {
    /** A claimed request is resolved first; a result over the claim threshold is returned as a claim (`output:<blockId>`). */
    async runHttpBlock(request: HttpBlockRequest | ClaimedIoRequest): Promise<HttpBlockResult | Claim> {
      const input = await resolveIoRequest(deps.db, request);
      const rules = parseAllowList(await deps.settings.get('http_block.allow_hosts'));
      let output: HttpBlockResult;
      try {
        output = await performHttpRequest(input, { rules, signal: activityCancellationSignal(), userAgent: USER_AGENT });
      } catch (error) {
        throw toActivityFailure(error);
      }
      return storeClaim(deps.db, input.runId, `output:${input.blockId}`, output);
    },
  };
}
