import { authMessages, type CredentialKind } from './principal.js';

export interface AccessRule {
  /** Credential kinds the endpoint group accepts. */
  accept: readonly CredentialKind[];
  /** Scopes an OAuth token must carry (all of them). */
  oauthScopes?: readonly string[];
  /** An agent token must also hold a grant for the exact METHOD and path. */
  agentNeedsGrant?: boolean;
  /** Whether `X-API-Key: <key>` is read when there is no Authorization header. */
  xApiKey?: boolean;
  /** 403 text for a valid credential of a kind the group does not accept. */
  wrongKindMessage: string;
  /**
   * The run endpoints of spec §7.2 (deployment, document, cross-team, gateway) answer a credential of
   * the wrong kind with 401 ("unsupported method"); every other row answers a valid credential of the
   * wrong kind 403 (spec §5.4).
   */
  wrongKindStatus?: 401 | 403;
  /** Replaces every 401 text of §5.4 for this group (run endpoints say only `Unauthorized`). */
  unauthorizedMessage?: string;
  /**
   * For OAuth tokens on a group that does not accept them: a token without this scope gets
   * `insufficient_scope` instead of `wrongKindMessage` (spec §4.4, /my/credentials/*).
   */
  foreignOAuthScope?: string;
}

/**
 * Spec §5.3 as one table: which endpoint group accepts which credential. Routes reference a row;
 * the test matrix walks every row × every credential kind.
 */
export const accessMatrix = {
  currentUser: {
    accept: ['jwt', 'api-key', 'agent', 'schedule'], agentNeedsGrant: true, xApiKey: true,
    wrongKindMessage: 'This endpoint does not accept OAuth tokens',
  },
  defaultProject: { accept: ['jwt', 'oauth'], oauthScopes: ['mobile:full'], wrongKindMessage: authMessages.jwtOrOAuthOnly },
  myCredentials: { accept: ['jwt'], wrongKindMessage: authMessages.jwtOnly, foreignOAuthScope: 'mobile:full' },
  oauthUserinfo: { accept: ['oauth'], oauthScopes: ['profile:read'], wrongKindMessage: 'This endpoint only accepts OAuth authentication' },
  /** Team administration (API keys, agents): a signed-in person, never a machine credential. */
  teamAdmin: { accept: ['jwt'], wrongKindMessage: authMessages.jwtOnly },
  /** Webhook management, schedules, graph, editor API. */
  combined: { accept: ['jwt', 'api-key'], xApiKey: true, wrongKindMessage: 'This endpoint only accepts JWT or API key authentication' },
  runsList: { accept: ['jwt'], wrongKindMessage: authMessages.jwtOnly },
  hardwareSales: { accept: ['jwt', 'oauth'], oauthScopes: ['orders:checkout'], wrongKindMessage: authMessages.jwtOrOAuthOnly },
  deploymentRun: {
    accept: ['api-key', 'schedule', 'oauth'], oauthScopes: ['chat:completions'], xApiKey: true,
    wrongKindMessage: 'Unauthorized', wrongKindStatus: 401, unauthorizedMessage: 'Unauthorized',
  },
  /** Cross-team bindings list and proxy: the run credentials of the grantee team (docs/cross-team.md). */
  crossTeam: {
    accept: ['api-key', 'schedule', 'oauth'], oauthScopes: ['chat:completions'], xApiKey: true,
    wrongKindMessage: 'Unauthorized', wrongKindStatus: 401, unauthorizedMessage: 'Unauthorized',
  },
  documentRun: {
    accept: ['api-key'], xApiKey: true, wrongKindStatus: 401, unauthorizedMessage: 'Unauthorized',
    wrongKindMessage: 'Unauthorized: Document ID route only supports API key authentication',
  },
  /** The generic `/v1` workflow API: API keys only. */
  v1: {
    accept: ['api-key'], xApiKey: true, unauthorizedMessage: 'Unauthorized',
    wrongKindMessage: 'This endpoint only accepts API key authentication',
  },
  /** Reading or cancelling a run already started (resume a stream, cancel): the run's own kinds of caller. */
  runFollowUp: {
    accept: ['jwt', 'api-key', 'oauth', 'schedule'], xApiKey: true,
    wrongKindMessage: 'This endpoint does not accept agent tokens', unauthorizedMessage: 'Unauthorized',
  },
  /**
   * The release gateway (§4.1 `/r/...`) once it has decided the call needs a credential: API keys,
   * OAuth (`chat:completions`, as the run route) and agent bindings, with no per-path grant (the
   * release is what the agent was given). The gateway applies this row itself, after matching the
   * endpoint, because whether a credential is needed depends on the endpoint (`skipAuth`).
   */
  releaseGateway: {
    accept: ['api-key', 'oauth', 'agent'], oauthScopes: ['chat:completions'], xApiKey: true,
    wrongKindMessage: 'Unauthorized', wrongKindStatus: 401, unauthorizedMessage: 'Unauthorized',
  },
  /** Connectors: a signed-in person only. */
  connectors: { accept: ['jwt'], wrongKindMessage: authMessages.jwtOnly, unauthorizedMessage: 'unauthorized' },
} as const satisfies Record<string, AccessRule>;

export type AccessRuleName = keyof typeof accessMatrix;
