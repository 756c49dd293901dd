import { z } from 'zod';
import { displayNameSchema } from '../../shared/identity/schemas.js';
import { createOAuthApp } from '../../shared/credentials/oauth/apps.js';
import { issueTokensByOperator } from '../../shared/credentials/oauth/operator.js';
import { parseScope, REFRESH_TOKEN_TTL_SECONDS } from '../../shared/credentials/oauth/rules.js';
import { defineCommand, flag, type Command } from './command.js';
import { positiveIntFlag, uuidFlag } from './flags.js';

const scopesFlag = z.string().transform((value) => parseScope(value)).pipe(z.array(z.string()).min(1, 'expected at least one scope'));

/**
 * OAuth operator commands (CONTRACTS.md). Apps made here are the reserved official apps spec §5.2
 * says administrators manage: created approved and `reserved` (over HTTP only platform
 * administrators may edit or delete them).
 */
export const oauthCommands: Record<string, Command> = {
  'oauth-app create': defineCommand({
    summary: 'Create a reserved official OAuth app, approved, with one web client',
    prints: '{ appId, clientId }',
    flags: {
      owner: flag(uuidFlag, 'the owning user', 'USER_ID'),
      name: flag(displayNameSchema, 'app name', 'N'),
      'redirect-uri': flag(z.string().min(1), "the web client's redirect URI", 'URL'),
      scopes: flag(scopesFlag.optional(), 'space-separated scopes (default profile:read)', '"a b"'),
    },
    run: (f, ctx) => createOAuthApp(ctx.db(), {
      ownerId: f.owner, name: f.name, reviewStatus: 'approved', reserved: true,
      client: { platform: 'web', redirectUris: [f['redirect-uri']], scopes: f.scopes ?? ['profile:read'] },
    }),
  }),

  'oauth-token issue': defineCommand({
    summary: "Issue OAuth tokens of an app for a user without the consent flow",
    prints: '{ accessToken, refreshToken, expiresIn }',
    flags: {
      app: flag(uuidFlag, 'the OAuth app', 'APP_ID'),
      user: flag(uuidFlag, 'the user', 'USER_ID'),
      scopes: flag(scopesFlag, 'space-separated scopes', '"a b"'),
      ttl: flag(positiveIntFlag.pipe(z.number().max(REFRESH_TOKEN_TTL_SECONDS)).optional(), "the refresh token's lifetime in seconds", 'SECONDS'),
    },
    run: (f, ctx) => issueTokensByOperator(ctx.db(), { appId: f.app, userId: f.user, scopes: f.scopes, ttlSeconds: f.ttl }),
  }),
};
