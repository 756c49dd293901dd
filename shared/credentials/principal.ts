/** Who is calling: one variant per credential kind (spec §5.1). */
export type Principal =
  | { kind: 'jwt'; userId: string; email: string; metadata: Record<string, unknown> }
  | { kind: 'api-key'; apiKeyId: string; userId: string; teamId: string; limitCredits: number | null; usageCredits: number }
  | { kind: 'oauth'; tokenId: string; userId: string; appId: string; clientId: string; scopes: string[]; expiresAt: Date }
  | { kind: 'agent'; bindingId: string; agentId: string; userId: string; ownerUserId: string; teamId: string | null; permissions: string[] }
  | { kind: 'schedule'; scheduleId: string; teamId: string; deploymentId: string };

export type CredentialKind = Principal['kind'];
export type PrincipalOf<K extends CredentialKind> = Extract<Principal, { kind: K }>;

/** The exact 401/403 texts of spec §5.4 and §7.4. */
export const authMessages = {
  missing: 'Missing or invalid authorization header',
  invalidApiKey: 'Invalid API key',
  invalidToken: 'Invalid token',
  invalidOAuth: 'Invalid or revoked OAuth token',
  expiredOAuth: 'OAuth token has expired',
  insufficientScope: 'insufficient_scope',
  jwtOnly: 'This endpoint only accepts JWT authentication',
  jwtOrOAuthOnly: 'This endpoint only accepts JWT or OAuth authentication',
  creditLimit: 'API key credit limit exceeded',
} as const;
