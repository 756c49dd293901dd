import { randomUUID } from 'node:crypto';
import { grantCredits } from '../../shared/billing/service.js';
import { createApiKey } from '../../shared/credentials/api-keys.js';
import { generateToken } from '../../shared/credentials/tokens.js';
import { sha256Hex } from '../../shared/crypto.js';
import { createTeam, createUser } from '../../shared/identity/service.js';
import type { TestStack } from './stack.js';

/**
 * Real credentials of every kind for tests, written the way the product writes them (hashes only).
 * OAuth and agent rows are inserted directly so auth tests do not depend on those flows.
 */
export function credentialFactory(stack: TestStack) {
  const { db } = stack;
  return {
    async user(label = 'user') {
      return createUser(db, { email: `${label}-${randomUUID().slice(0, 8)}@example.com`, name: label });
    },
    async team(ownerId: string, name = 'Team') {
      return createTeam(db, { ownerId, name });
    },
    jwt: (userId: string, ttlSeconds = 600) => stack.deps.idp.issue(userId, ttlSeconds),
    apiKey: (teamId: string, userId: string) => createApiKey(db, { teamId, createdBy: userId, name: 'test key' }),
    async agentToken(teamId: string, ownerUserId: string, permissions: string[]) {
      const agentUser = await createUser(db, { email: `agent+${randomUUID()}@agents.invalid`, name: 'Agent' });
      await db.updateTable('users').set({ is_agent: true }).where('id', '=', agentUser.id).execute();
      const agentId = randomUUID();
      await db.insertInto('agents').values({ id: agentId, team_id: teamId, user_id: agentUser.id, name: 'Agent', permissions, created_by: ownerUserId }).execute();
      const token = generateToken('agent');
      const bindingId = randomUUID();
      await db.insertInto('agent_bindings').values({
        id: bindingId, agent_id: agentId, agent_user_id: agentUser.id, owner_user_id: ownerUserId, team_id: teamId, token_hash: sha256Hex(token),
      }).execute();
      return { token, bindingId, agentId, agentUserId: agentUser.id };
    },
    async oauthToken(userId: string, scopes: string[], options: { expiresInSeconds?: number } = {}) {
      const appId = randomUUID();
      const clientPk = randomUUID();
      const grantId = randomUUID();
      await db.insertInto('oauth_apps').values({ id: appId, owner_id: userId, name: 'Test app', review_status: 'approved' }).execute();
      await db.insertInto('oauth_clients').values({
        id: clientPk, app_id: appId, client_id: `client-${clientPk}`, platform: 'web', redirect_uris: ['http://127.0.0.1/cb'], allowed_scopes: scopes,
      }).execute();
      await db.insertInto('oauth_grants').values({ id: grantId, client_pk: clientPk, app_id: appId, user_id: userId, scopes }).execute();
      const token = generateToken('oauthAccess');
      const tokenId = randomUUID();
      await db.insertInto('oauth_tokens').values({
        id: tokenId, grant_id: grantId, kind: 'access', token_hash: sha256Hex(token), client_pk: clientPk, app_id: appId, user_id: userId, scopes,
        expires_at: new Date(Date.now() + (options.expiresInSeconds ?? 3600) * 1000),
      }).execute();
      return { token, tokenId, appId, clientId: `client-${clientPk}` };
    },
    /** An owner, their team with credits to spend, and an API key of that team: what run tests start from. */
    async fundedTenant(milliCredits = 10_000) {
      const owner = await createUser(db, { email: `owner-${randomUUID().slice(0, 8)}@example.com`, name: 'owner' });
      const team = await createTeam(db, { ownerId: owner.id, name: 'Team' });
      await grantCredits(db, { teamId: team.id, amountMilli: milliCredits });
      const apiKey = await createApiKey(db, { teamId: team.id, createdBy: owner.id, name: 'test key' });
      return { owner, team, apiKey: apiKey.token };
    },
    scheduleToken: (teamId: string, ttlSeconds = 600) =>
      stack.deps.scheduleTokens.issue({ scheduleId: randomUUID(), teamId, deploymentId: randomUUID() }, ttlSeconds),
  };
}
