import { z } from 'zod';
import { displayNameSchema } from '../../shared/identity/schemas.js';
import { createOAuthApp } from '../../shared/credentials/oauth/apps.js';
import { issueTokensByOperator } from '../../shared/credentials/oauth/operator.js';
import { parseScope, REFRESH_TOKEN_TTL_SECONDS } from '../../shared/credentials/oauth/rules.js';
import type { Command } from './command.js';
import { positiveIntFlag, readFlags, uuidFlag } from './flags.js';

const scopesFlag = z.string().transform((value) => parseScope(value)).pipe(z.array(z.string()).min(1, 'expected at least one scope'));

/**
 * OAuth operator commands (CONTRACTS.md). Apps made here are the reserved official apps spec §5.2
 * says administrators manage: created approved and `reserved` (over HTTP only platform
 * administrators may edit or delete them).
 */
export const oauthCommands: Record<string, Command> = {
  'oauth-app create': async (flags, ctx) => {
    const f = readFlags(flags, { owner: uuidFlag, name: displayNameSchema, 'redirect-uri': z.string().min(1), scopes: scopesFlag.optional() });
    return createOAuthApp(ctx.db(), {
      ownerId: f.owner, name: f.name, reviewStatus: 'approved', reserved: true,
      client: { platform: 'web', redirectUris: [f['redirect-uri']], scopes: f.scopes ?? ['profile:read'] },
    });
  },

  'oauth-token issue': async (flags, ctx) => {
    const f = readFlags(flags, {
      app: uuidFlag, user: uuidFlag, scopes: scopesFlag, ttl: positiveIntFlag.pipe(z.number().max(REFRESH_TOKEN_TTL_SECONDS)).optional(),
    });
    return issueTokensByOperator(ctx.db(), { appId: f.app, userId: f.user, scopes: f.scopes, ttlSeconds: f.ttl });
  },
};
