import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../shared/crypto.js';
import { createApiKey } from '../../shared/credentials/api-keys.js';
import { hasValidTokenShape } from '../../shared/credentials/tokens.js';
import { addTeamMember, createTeam, createUser } from '../../shared/identity/service.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

const MISSING = '00000000-0000-4000-8000-000000000000';
const jwtOnly = { error: 'This endpoint only accepts JWT authentication', message: 'This endpoint only accepts JWT authentication' };
const invalidToken = { error: 'Invalid token', message: 'Invalid token' };

describe('agents, agent tokens and the agent rows of /my/credentials', () => {
  let stack: TestStack;
  const unique = () => randomBytes(4).toString('hex');

  beforeAll(async () => {
    stack = await createTestStack();
    // GET /my is the lead's route (api/routes/identity). Until it is registered in api/app.ts, stand in
    // with a route on the same access row, so what this file checks (the auth plugin letting an agent
    // token through only with the `GET /my` grant) is still exercised for real.
    if (!stack.app.hasRoute({ method: 'GET', url: '/my' })) {
      stack.app.get('/my', { config: { access: 'currentUser' } }, async (request) => {
        const p = request.principal!;
        return p.kind === 'agent' ? { userId: p.userId, teamId: p.teamId, bindingId: p.bindingId } : { kind: p.kind };
      });
    }
  });
  afterAll(() => stack?.close());

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const jwt = async (userId: string) => bearer(await stack.deps.idp.issue(userId, 600));
  const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, headers: Record<string, string> = {}, payload?: unknown) =>
    stack.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });

  /** Everything an agent endpoint could write: compared before and after each refused call. */
  const dbState = async () => ({
    agents: await stack.db.selectFrom('agents').selectAll().orderBy('id').execute(),
    bindings: await stack.db.selectFrom('agent_bindings').selectAll().orderBy('id').execute(),
    users: await stack.db.selectFrom('users').selectAll().orderBy('id').execute(),
  });

  /** A team with an owner, an admin, a plain member, and an outsider who belongs to another team. */
  async function tenant() {
    const user = (name: string) => createUser(stack.db, { email: `${name}-${unique()}@example.com`, name });
    const [owner, admin, member, outsider] = await Promise.all([user('owner'), user('admin'), user('member'), user('outsider')]);
    const team = await createTeam(stack.db, { ownerId: owner.id, name: 'Agents Inc' });
    const otherTeam = await createTeam(stack.db, { ownerId: outsider.id, name: 'Elsewhere' });
    await addTeamMember(stack.db, { teamId: team.id, userId: admin.id, role: 'admin' });
    await addTeamMember(stack.db, { teamId: team.id, userId: member.id, role: 'member' });
    return { owner, admin, member, outsider, team, otherTeam };
  }

  async function createAgentVia(teamId: string, userId: string, body: Record<string, unknown>) {
    const res = await call('POST', `/teams/${teamId}/agents`, await jwt(userId), body);
    expect(res.statusCode).toBe(201);
    return res.json().agent as { id: string; userId: string; name: string; permissions: string[] };
  }

  async function issueVia(teamId: string, agentId: string, userId: string) {
    const res = await call('POST', `/teams/${teamId}/agents/${agentId}/tokens`, await jwt(userId));
    expect(res.statusCode).toBe(201);
    return res.json() as { bindingId: string; token: string };
  }

  /** A tenant with one agent granted `GET /my` and one live token issued by the owner. */
  async function withToken(permissions = ['GET /my']) {
    const t = await tenant();
    const agent = await createAgentVia(t.team.id, t.owner.id, { name: 'Helper', avatarUrl: 'https://example.com/a.png', permissions });
    const issued = await issueVia(t.team.id, agent.id, t.owner.id);
    return { ...t, agent, ...issued };
  }

  async function expectUnchanged(before: Awaited<ReturnType<typeof dbState>>) {
    expect(await dbState()).toEqual(before);
  }

  describe('team agent management', () => {
    it('POST /teams/:teamId/agents creates the agent and its virtual user', async () => {
      const t = await tenant();
      const res = await call('POST', `/teams/${t.team.id}/agents`, await jwt(t.owner.id), {
        name: '  Support bot ', description: 'Answers tickets', avatarUrl: 'https://example.com/bot.png',
        permissions: ['GET /my', 'POST /api/released-app/*/run', 'GET /my', '* /api/**'],
      });
      expect(res.statusCode).toBe(201);
      const agent = res.json().agent;
      expect(agent).toEqual({
        id: expect.any(String), teamId: t.team.id, userId: expect.any(String), name: 'Support bot', description: 'Answers tickets',
        avatarUrl: 'https://example.com/bot.png', permissions: ['GET /my', 'POST /api/released-app/*/run', '* /api/**'],
        createdBy: t.owner.id, createdAt: expect.any(String),
      });
      const row = await stack.db.selectFrom('agents').selectAll().where('id', '=', agent.id).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ team_id: t.team.id, user_id: agent.userId, name: 'Support bot', permissions: agent.permissions, created_by: t.owner.id, deleted_at: null });
      const user = await stack.db.selectFrom('users').selectAll().where('id', '=', agent.userId).executeTakeFirstOrThrow();
      expect(user).toMatchObject({ is_agent: true, email: `agent+${agent.id}@agents.invalid`, name: 'Support bot' });
      expect(user.metadata).toMatchObject({ display_name: 'Support bot', avatar_url: 'https://example.com/bot.png' });
    });

    it('an admin creates an agent with only a name; GET lists the live agents newest first', async () => {
      const t = await tenant();
      const first = await createAgentVia(t.team.id, t.admin.id, { name: 'First' });
      expect(first.permissions).toEqual([]);
      const second = await createAgentVia(t.team.id, t.owner.id, { name: 'Second' });
      const gone = await createAgentVia(t.team.id, t.owner.id, { name: 'Gone' });
      await stack.db.updateTable('agents').set({ deleted_at: new Date() }).where('id', '=', gone.id).execute();
      await createAgentVia(t.otherTeam.id, t.outsider.id, { name: 'Not ours' });

      const res = await call('GET', `/teams/${t.team.id}/agents`, await jwt(t.admin.id));
      expect(res.statusCode).toBe(200);
      expect(res.json().agents.map((a: { id: string }) => a.id)).toEqual([second.id, first.id]);
      expect(res.json().agents[1]).toMatchObject({ name: 'First', createdBy: t.admin.id, description: null, avatarUrl: null });
    });

    it('POST /teams/:teamId/agents/:agentId/tokens returns the plaintext once and stores only its sha256', async () => {
      const t = await tenant();
      const agent = await createAgentVia(t.team.id, t.admin.id, { name: 'Issuer test' });
      const res = await call('POST', `/teams/${t.team.id}/agents/${agent.id}/tokens`, await jwt(t.admin.id));
      expect(res.statusCode).toBe(201);
      const { bindingId, token } = res.json();
      expect(res.json()).toEqual({ bindingId: expect.any(String), token: expect.stringMatching(/^wfa-/) });
      expect(hasValidTokenShape('agent', token)).toBe(true);
      const row = await stack.db.selectFrom('agent_bindings').selectAll().where('id', '=', bindingId).executeTakeFirstOrThrow();
      expect(row).toMatchObject({
        agent_id: agent.id, agent_user_id: agent.userId, owner_user_id: t.admin.id, team_id: t.team.id,
        token_hash: sha256Hex(token), can_send: true, can_receive: true, revoked_at: null, deleted_at: null,
      });
      expect(JSON.stringify(await dbState())).not.toContain(token);
      // Each issue is a new binding with a new token.
      const again = await issueVia(t.team.id, agent.id, t.owner.id);
      expect(again.bindingId).not.toBe(bindingId);
      expect(again.token).not.toBe(token);
    });

    it('an agent token reaches GET /my only when its permission group grants it', async () => {
      const granted = await withToken(['GET /my']);
      const ok = await call('GET', '/my', bearer(granted.token));
      expect(ok.statusCode).toBe(200);
      expect(ok.json()).toEqual({ userId: granted.agent.userId, teamId: granted.team.id, bindingId: granted.bindingId });

      const wildcard = await withToken(['GET /**']);
      expect((await call('GET', '/my', bearer(wildcard.token))).statusCode).toBe(200);

      const denied = await withToken(['POST /my', 'GET /my/credentials/**']);
      const res = await call('GET', '/my', bearer(denied.token));
      expect(res.statusCode).toBe(403);
      expect(res.json().error).toMatch(/^Permission denied: /);
    });

    it('POST /teams/:teamId/agents/:bindingId/revoke-token stops the token at once and is idempotent', async () => {
      const t = await withToken();
      expect((await call('GET', '/my', bearer(t.token))).statusCode).toBe(200);
      const res = await call('POST', `/teams/${t.team.id}/agents/${t.bindingId}/revoke-token`, await jwt(t.admin.id));
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ success: true });
      const row = await stack.db.selectFrom('agent_bindings').selectAll().where('id', '=', t.bindingId).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ token_hash: null, revoked_at: expect.any(Date), deleted_at: null });

      const next = await call('GET', '/my', bearer(t.token));
      expect(next.statusCode).toBe(401);
      expect(next.json()).toEqual(invalidToken);

      const before = await dbState();
      const repeat = await call('POST', `/teams/${t.team.id}/agents/${t.bindingId}/revoke-token`, await jwt(t.owner.id));
      expect(repeat.statusCode).toBe(200);
      expect(repeat.json()).toEqual({ success: true, alreadyRevoked: true });
      await expectUnchanged(before);
    });
  });

  describe('team agent management: bad input changes nothing', () => {
    it.each([
      ['no path', 'GET my'],
      ['unknown method', 'FETCH /my'],
      ['lower-case method', 'get /my'],
      ['wildcard inside a segment', 'GET /api/run*'],
      ['** not last', 'GET /**/run'],
      ['empty grant', ''],
      ['query string', 'GET /my?x=1'],
    ])('400 for an invalid permission grant (%s)', async (_case, grant) => {
      const t = await tenant();
      const before = await dbState();
      const res = await call('POST', `/teams/${t.team.id}/agents`, await jwt(t.owner.id), { name: 'Bad', permissions: ['GET /my', grant] });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_request', details: [expect.objectContaining({ field: 'body.permissions.1' })] });
      await expectUnchanged(before);
    });

    it.each([
      ['missing name', {}, 'body.name'],
      ['blank name', { name: '   ' }, 'body.name'],
      ['permissions not an array', { name: 'x', permissions: 'GET /my' }, 'body.permissions'],
      ['avatarUrl not an http(s) URL', { name: 'x', avatarUrl: 'javascript:alert(1)' }, 'body.avatarUrl'],
      ['unknown field', { name: 'x', teamId: MISSING }, 'body'],
    ])('400 with field details for a bad body (%s)', async (_case, body, field) => {
      const t = await tenant();
      const before = await dbState();
      const res = await call('POST', `/teams/${t.team.id}/agents`, await jwt(t.owner.id), body);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_request', details: [expect.objectContaining({ field })] });
      await expectUnchanged(before);
    });

    it('403 Forbidden for a plain member creating an agent, issuing or revoking a token, or listing agents', async () => {
      const t = await withToken();
      const before = await dbState();
      const headers = await jwt(t.member.id);
      for (const [method, url] of [
        ['POST', `/teams/${t.team.id}/agents`], ['GET', `/teams/${t.team.id}/agents`],
        ['POST', `/teams/${t.team.id}/agents/${t.agent.id}/tokens`], ['POST', `/teams/${t.team.id}/agents/${t.bindingId}/revoke-token`],
      ] as const) {
        const res = await call(method, url, headers, method === 'POST' && url.endsWith('/agents') ? { name: 'Mine' } : undefined);
        expect(res.statusCode, `${method} ${url}`).toBe(403);
        expect(res.json()).toMatchObject({ error: 'Forbidden' });
      }
      await expectUnchanged(before);
      expect((await call('GET', '/my', bearer(t.token))).statusCode).toBe(200);
    });

    it('404 Team not found for a non-member, an unknown team, a malformed id and a deleted team', async () => {
      const t = await withToken();
      const deleted = await createTeam(stack.db, { ownerId: t.owner.id, name: 'Deleted' });
      await stack.db.updateTable('teams').set({ deleted_at: new Date() }).where('id', '=', deleted.id).execute();
      const before = await dbState();
      for (const [teamId, userId] of [[t.team.id, t.outsider.id], [MISSING, t.owner.id], ['not-a-uuid', t.owner.id], [deleted.id, t.owner.id]] as const) {
        const headers = await jwt(userId);
        for (const res of [
          await call('POST', `/teams/${teamId}/agents`, headers, { name: 'x' }),
          await call('GET', `/teams/${teamId}/agents`, headers),
          await call('POST', `/teams/${teamId}/agents/${t.agent.id}/tokens`, headers),
          await call('POST', `/teams/${teamId}/agents/${t.bindingId}/revoke-token`, headers),
        ]) {
          expect(res.statusCode).toBe(404);
          expect(res.json()).toEqual({ error: 'Team not found', message: 'Team not found' });
        }
      }
      await expectUnchanged(before);
    });

    it('404 Agent not found when issuing for an unknown, deleted or other-team agent', async () => {
      const t = await withToken();
      const foreign = await createAgentVia(t.otherTeam.id, t.outsider.id, { name: 'Foreign' });
      const deleted = await createAgentVia(t.team.id, t.owner.id, { name: 'Deleted' });
      await stack.db.updateTable('agents').set({ deleted_at: new Date() }).where('id', '=', deleted.id).execute();
      const before = await dbState();
      for (const agentId of [MISSING, 'nope', foreign.id, deleted.id]) {
        const res = await call('POST', `/teams/${t.team.id}/agents/${agentId}/tokens`, await jwt(t.owner.id));
        expect(res.statusCode).toBe(404);
        expect(res.json()).toEqual({ error: 'Agent not found', message: 'Agent not found' });
      }
      await expectUnchanged(before);
    });

    it('404 Agent binding not found when revoking a missing, soft-deleted or other-team binding from the team side', async () => {
      const t = await withToken();
      const foreign = await createAgentVia(t.otherTeam.id, t.outsider.id, { name: 'Foreign', permissions: ['GET /my'] });
      const foreignBinding = await issueVia(t.otherTeam.id, foreign.id, t.outsider.id);
      const soft = await issueVia(t.team.id, t.agent.id, t.owner.id);
      await stack.db.updateTable('agent_bindings').set({ deleted_at: new Date() }).where('id', '=', soft.bindingId).execute();
      const before = await dbState();
      for (const bindingId of [MISSING, 'nope', foreignBinding.bindingId, soft.bindingId]) {
        const res = await call('POST', `/teams/${t.team.id}/agents/${bindingId}/revoke-token`, await jwt(t.owner.id));
        expect(res.statusCode).toBe(404);
        expect(res.json()).toEqual({ error: 'Agent binding not found', message: 'Agent binding not found' });
      }
      await expectUnchanged(before);
      expect((await call('GET', '/my', bearer(foreignBinding.token))).statusCode).toBe(200);
    });

    it('the team endpoints take a signed-in person only: API key and agent token get 403, no credential 401', async () => {
      const t = await withToken();
      const key = await createApiKey(stack.db, { teamId: t.team.id, createdBy: t.owner.id, name: 'ci' });
      const before = await dbState();
      for (const headers of [bearer(key.token), { 'x-api-key': key.token }, bearer(t.token)]) {
        const res = await call('POST', `/teams/${t.team.id}/agents`, headers, { name: 'x' });
        if ('x-api-key' in headers) {
          expect(res.statusCode).toBe(401); // X-API-Key is read only where the row allows it
          continue;
        }
        expect(res.statusCode).toBe(403);
        expect(res.json()).toEqual(jwtOnly);
      }
      const none = await call('POST', `/teams/${t.team.id}/agents/${t.bindingId}/revoke-token`);
      expect(none.statusCode).toBe(401);
      expect(none.json()).toMatchObject({ error: 'Missing or invalid authorization header' });
      await expectUnchanged(before);
    });
  });

  describe('agent token authentication failures', () => {
    it('401 for a token with a bad checksum (no lookup, nothing changed)', async () => {
      const t = await withToken();
      const last = t.token.at(-1) === 'A' ? 'B' : 'A';
      const tampered = t.token.slice(0, -1) + last;
      expect(hasValidTokenShape('agent', tampered)).toBe(false);
      const before = await dbState();
      const res = await call('GET', '/my', bearer(tampered));
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual(invalidToken);
      await expectUnchanged(before);
    });

    it('401 for a well-formed token that was never issued', async () => {
      await withToken();
      const { generateToken } = await import('../../shared/credentials/tokens.js');
      const before = await dbState();
      const res = await call('GET', '/my', bearer(generateToken('agent')));
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual(invalidToken);
      await expectUnchanged(before);
    });

    it('401 for a revoked token', async () => {
      const t = await withToken();
      await stack.db.updateTable('agent_bindings').set({ token_hash: null, revoked_at: new Date() }).where('id', '=', t.bindingId).execute();
      const before = await dbState();
      const res = await call('GET', '/my', bearer(t.token));
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual(invalidToken);
      await expectUnchanged(before);
    });

    it('401 for the token of a soft-deleted binding (hash still present) and of a deleted agent', async () => {
      const t = await withToken();
      await stack.db.updateTable('agent_bindings').set({ deleted_at: new Date() }).where('id', '=', t.bindingId).execute();
      const other = await withToken();
      await stack.db.updateTable('agents').set({ deleted_at: new Date() }).where('id', '=', other.agent.id).execute();
      const before = await dbState();
      for (const token of [t.token, other.token]) {
        const res = await call('GET', '/my', bearer(token));
        expect(res.statusCode).toBe(401);
        expect(res.json()).toEqual(invalidToken);
      }
      await expectUnchanged(before);
    });
  });

  describe('/my/credentials/agent-tokens', () => {
    it('GET lists the live tokens the caller issued, newest first, with the §2.6 fields', async () => {
      const t = await withToken();
      const second = await issueVia(t.team.id, t.agent.id, t.owner.id);
      const revoked = await issueVia(t.team.id, t.agent.id, t.owner.id);
      await call('POST', `/teams/${t.team.id}/agents/${revoked.bindingId}/revoke-token`, await jwt(t.owner.id));
      const deleted = await issueVia(t.team.id, t.agent.id, t.owner.id);
      await stack.db.updateTable('agent_bindings').set({ deleted_at: new Date() }).where('id', '=', deleted.bindingId).execute();
      await issueVia(t.team.id, t.agent.id, t.admin.id); // someone else's
      // created_at ties are possible within one transaction-less burst; make the order unambiguous.
      await stack.db.updateTable('agent_bindings').set({ created_at: sql<Date>`now() - interval '1 minute'` }).where('id', '=', t.bindingId).execute();

      const res = await call('GET', '/my/credentials/agent-tokens', await jwt(t.owner.id));
      expect(res.statusCode).toBe(200);
      const items = res.json().items;
      expect(items.map((i: { binding_id: string }) => i.binding_id)).toEqual([second.bindingId, t.bindingId]);
      expect(items[1]).toEqual({
        binding_id: t.bindingId, agent_user_id: t.agent.userId, agent_display_name: 'Helper', agent_avatar_url: 'https://example.com/a.png',
        team_id: t.team.id, team_name: 'Agents Inc', team_slug: t.team.slug, can_send: true, can_receive: true,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      });
      const empty = await call('GET', '/my/credentials/agent-tokens', await jwt(t.member.id));
      expect(empty.json()).toEqual({ items: [] });
    });

    it('DELETE revokes (token stops at once, binding kept), then answers alreadyRevoked', async () => {
      const t = await withToken();
      const res = await call('DELETE', `/my/credentials/agent-tokens/${t.bindingId}`, await jwt(t.owner.id));
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ success: true });
      const row = await stack.db.selectFrom('agent_bindings').selectAll().where('id', '=', t.bindingId).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ token_hash: null, revoked_at: expect.any(Date), deleted_at: null });
      expect((await call('GET', '/my', bearer(t.token))).json()).toEqual(invalidToken);
      const listed = await call('GET', '/my/credentials/agent-tokens', await jwt(t.owner.id));
      expect(listed.json()).toEqual({ items: [] });

      const before = await dbState();
      const repeat = await call('DELETE', `/my/credentials/agent-tokens/${t.bindingId}`, await jwt(t.owner.id));
      expect(repeat.statusCode).toBe(200);
      expect(repeat.json()).toEqual({ success: true, alreadyRevoked: true });
      await expectUnchanged(before);
    });

    it('403 Forbidden for a binding issued by someone else (even a team admin)', async () => {
      const t = await withToken();
      const before = await dbState();
      for (const userId of [t.admin.id, t.outsider.id, t.agent.userId]) {
        const res = await call('DELETE', `/my/credentials/agent-tokens/${t.bindingId}`, await jwt(userId));
        expect(res.statusCode).toBe(403);
        expect(res.json()).toMatchObject({ error: 'Forbidden' });
      }
      await expectUnchanged(before);
      expect((await call('GET', '/my', bearer(t.token))).statusCode).toBe(200);
    });

    it('404 Agent binding not found for a missing, malformed or soft-deleted binding', async () => {
      const t = await withToken();
      await stack.db.updateTable('agent_bindings').set({ deleted_at: new Date() }).where('id', '=', t.bindingId).execute();
      const before = await dbState();
      for (const id of [MISSING, 'not-a-uuid', t.bindingId]) {
        const res = await call('DELETE', `/my/credentials/agent-tokens/${id}`, await jwt(t.owner.id));
        expect(res.statusCode).toBe(404);
        expect(res.json()).toEqual({ error: 'Agent binding not found', message: 'Agent binding not found' });
      }
      await expectUnchanged(before);
    });

    it('500 Failed to revoke agent token when the write fails, leaving the token live', async () => {
      const t = await withToken();
      await sql`CREATE FUNCTION test_refuse_binding_writes() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by test'; END $$`.execute(stack.db);
      await sql`CREATE TRIGGER test_refuse_binding_writes BEFORE UPDATE ON agent_bindings FOR EACH ROW EXECUTE FUNCTION test_refuse_binding_writes()`.execute(stack.db);
      try {
        const before = await dbState();
        const res = await call('DELETE', `/my/credentials/agent-tokens/${t.bindingId}`, await jwt(t.owner.id));
        expect(res.statusCode).toBe(500);
        expect(res.json()).toEqual({ error: 'Failed to revoke agent token', message: 'Failed to revoke agent token' });
        const team = await call('POST', `/teams/${t.team.id}/agents/${t.bindingId}/revoke-token`, await jwt(t.owner.id));
        expect(team.json()).toMatchObject({ error: 'Failed to revoke agent token' });
        const asAgent = await call('DELETE', `/my/credentials/agent-bindings-as-agent/${t.bindingId}`, await jwt(t.agent.userId));
        expect(asAgent.statusCode).toBe(500);
        expect(asAgent.json()).toEqual({ error: 'Failed to remove agent binding', message: 'Failed to remove agent binding' });
        await expectUnchanged(before);
      } finally {
        await sql`DROP TRIGGER test_refuse_binding_writes ON agent_bindings`.execute(stack.db);
        await sql`DROP FUNCTION test_refuse_binding_writes()`.execute(stack.db);
      }
      expect((await call('GET', '/my', bearer(t.token))).statusCode).toBe(200);
    });
  });

  describe('/my/credentials/agent-bindings-as-agent (the agent user signed in with a JWT)', () => {
    it('GET lists the bindings of the calling agent user, revoked included, deleted excluded, with the §2.7 fields', async () => {
      const t = await withToken();
      const byAdmin = await issueVia(t.team.id, t.agent.id, t.admin.id);
      await call('POST', `/teams/${t.team.id}/agents/${byAdmin.bindingId}/revoke-token`, await jwt(t.owner.id));
      const deleted = await issueVia(t.team.id, t.agent.id, t.owner.id);
      await stack.db.updateTable('agent_bindings').set({ deleted_at: new Date() }).where('id', '=', deleted.bindingId).execute();
      await stack.db.updateTable('agent_bindings').set({ created_at: sql<Date>`now() - interval '1 minute'` }).where('id', '=', t.bindingId).execute();
      const otherAgent = await createAgentVia(t.team.id, t.owner.id, { name: 'Other' });
      await issueVia(t.team.id, otherAgent.id, t.owner.id);

      const res = await call('GET', '/my/credentials/agent-bindings-as-agent', await jwt(t.agent.userId));
      expect(res.statusCode).toBe(200);
      expect(res.json().items).toEqual([
        {
          binding_id: byAdmin.bindingId, owner_user_id: t.admin.id, owner_display_name: 'admin', team_id: t.team.id,
          team_name: 'Agents Inc', team_slug: t.team.slug, can_send: true, can_receive: true, created_at: expect.any(String),
        },
        expect.objectContaining({ binding_id: t.bindingId, owner_user_id: t.owner.id, owner_display_name: 'owner' }),
      ]);
      const person = await call('GET', '/my/credentials/agent-bindings-as-agent', await jwt(t.owner.id));
      expect(person.json()).toEqual({ items: [] });
    });

    it('DELETE soft-deletes the binding and nulls its hash; the token stops and a repeat is 404', async () => {
      const t = await withToken();
      const res = await call('DELETE', `/my/credentials/agent-bindings-as-agent/${t.bindingId}`, await jwt(t.agent.userId));
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ success: true });
      const row = await stack.db.selectFrom('agent_bindings').selectAll().where('id', '=', t.bindingId).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ token_hash: null, deleted_at: expect.any(Date), revoked_at: expect.any(Date) });
      expect((await call('GET', '/my', bearer(t.token))).json()).toEqual(invalidToken);
      expect((await call('GET', '/my/credentials/agent-bindings-as-agent', await jwt(t.agent.userId))).json()).toEqual({ items: [] });
      expect((await call('GET', '/my/credentials/agent-tokens', await jwt(t.owner.id))).json()).toEqual({ items: [] });

      const before = await dbState();
      const repeat = await call('DELETE', `/my/credentials/agent-bindings-as-agent/${t.bindingId}`, await jwt(t.agent.userId));
      expect(repeat.statusCode).toBe(404);
      expect(repeat.json()).toEqual({ error: 'Agent binding not found', message: 'Agent binding not found' });
      const owner = await call('DELETE', `/my/credentials/agent-tokens/${t.bindingId}`, await jwt(t.owner.id));
      expect(owner.statusCode).toBe(404);
      await expectUnchanged(before);
    });

    it('403 Forbidden for a binding of another agent (or for its owner, who is not the agent)', async () => {
      const t = await withToken();
      const otherAgent = await createAgentVia(t.team.id, t.owner.id, { name: 'Other' });
      const before = await dbState();
      for (const userId of [otherAgent.userId, t.owner.id]) {
        const res = await call('DELETE', `/my/credentials/agent-bindings-as-agent/${t.bindingId}`, await jwt(userId));
        expect(res.statusCode).toBe(403);
        expect(res.json()).toMatchObject({ error: 'Forbidden' });
      }
      await expectUnchanged(before);
    });

    it('404 Agent binding not found for a missing or malformed binding', async () => {
      const t = await withToken();
      const before = await dbState();
      for (const id of [MISSING, 'x']) {
        const res = await call('DELETE', `/my/credentials/agent-bindings-as-agent/${id}`, await jwt(t.agent.userId));
        expect(res.statusCode).toBe(404);
        expect(res.json()).toEqual({ error: 'Agent binding not found', message: 'Agent binding not found' });
      }
      await expectUnchanged(before);
    });
  });

  it('the agent endpoints are in the OpenAPI document', async () => {
    const res = await call('GET', '/docs/json');
    expect(res.statusCode).toBe(200);
    const paths = res.json().paths as Record<string, Record<string, unknown>>;
    expect(Object.keys(paths['/teams/{teamId}/agents'] ?? {}).sort()).toEqual(['get', 'post']);
    expect(paths['/teams/{teamId}/agents/{agentId}/tokens']).toHaveProperty('post');
    expect(paths['/teams/{teamId}/agents/{bindingId}/revoke-token']).toHaveProperty('post');
    expect(paths['/my/credentials/agent-tokens']).toHaveProperty('get');
    expect(paths['/my/credentials/agent-tokens/{bindingId}']).toHaveProperty('delete');
    expect(paths['/my/credentials/agent-bindings-as-agent']).toHaveProperty('get');
    expect(paths['/my/credentials/agent-bindings-as-agent/{bindingId}']).toHaveProperty('delete');
  });

  describe('/my/credentials/* agent rows are JWT only', () => {
    it('403 for an API key or an agent token, 401 without a credential or with a bad one; nothing changes', async () => {
      const t = await withToken(['* /**']); // even a grant of everything does not open a JWT-only row
      const key = await createApiKey(stack.db, { teamId: t.team.id, createdBy: t.owner.id, name: 'ci' });
      const before = await dbState();
      const endpoints = [
        ['GET', '/my/credentials/agent-tokens'], ['DELETE', `/my/credentials/agent-tokens/${t.bindingId}`],
        ['GET', '/my/credentials/agent-bindings-as-agent'], ['DELETE', `/my/credentials/agent-bindings-as-agent/${t.bindingId}`],
      ] as const;
      for (const [method, url] of endpoints) {
        for (const token of [key.token, t.token]) {
          const res = await call(method, url, bearer(token));
          expect(res.statusCode, `${method} ${url}`).toBe(403);
          expect(res.json()).toEqual(jwtOnly);
        }
        const none = await call(method, url);
        expect(none.statusCode).toBe(401);
        expect(none.json()).toMatchObject({ error: 'Missing or invalid authorization header' });
        const garbage = await call(method, url, bearer('not-a-jwt'));
        expect(garbage.statusCode).toBe(401);
        expect(garbage.json()).toEqual(invalidToken);
      }
      await expectUnchanged(before);
      expect((await call('GET', '/my', bearer(t.token))).statusCode).toBe(200);
    });
  });
});
