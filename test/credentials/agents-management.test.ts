import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../shared/credentials/api-keys.js';
import { addTeamMember, createTeam, createUser } from '../../shared/identity/service.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// Issue 38, agents (spec 2.6, 2.7, 3.4, 5.1): update and delete an agent, the team's bindings and
// their switches, over HTTP, for team owners and admins (docs/agents.md).

const MISSING = '00000000-0000-4000-8000-000000000000';
const invalidToken = { error: 'Invalid token', message: 'Invalid token' };
const agentNotFound = { error: 'Agent not found', message: 'Agent not found' };
const bindingNotFound = { error: 'Agent binding not found', message: 'Agent binding not found' };
const teamNotFound = { error: 'Team not found', message: 'Team not found' };

describe('agent management: update, delete, bindings', () => {
  let stack: TestStack;
  const unique = () => randomBytes(4).toString('hex');

  beforeAll(async () => {
    stack = await createTestStack();
    // As in agents.test.ts: stand in for GET /my (same access row) if the identity routes lack it.
    if (!stack.app.hasRoute({ method: 'GET', url: '/my' })) {
      stack.app.get('/my', { config: { access: 'currentUser' } }, async (request) => ({ kind: request.principal!.kind }));
    }
  });
  afterAll(() => stack?.close());

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const jwt = async (userId: string) => bearer(await stack.deps.idp.issue(userId, 600));
  const call = async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: Record<string, string> = {}, payload?: unknown) =>
    stack.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });

  const dbState = async () => ({
    agents: await stack.db.selectFrom('agents').selectAll().orderBy('id').execute(),
    bindings: await stack.db.selectFrom('agent_bindings').selectAll().orderBy('id').execute(),
    users: await stack.db.selectFrom('users').selectAll().orderBy('id').execute(),
  });
  const expectUnchanged = async (before: Awaited<ReturnType<typeof dbState>>) => expect(await dbState()).toEqual(before);

  /** Team A (owner, admin, member) with an agent granted `GET /my` and a token issued by the owner; team B with its own agent and token. */
  async function tenant() {
    const user = (name: string) => createUser(stack.db, { email: `${name}-${unique()}@example.com`, name });
    const [owner, admin, member, outsider] = await Promise.all([user('owner'), user('admin'), user('member'), user('outsider')]);
    const team = await createTeam(stack.db, { ownerId: owner.id, name: 'Agents Inc' });
    const otherTeam = await createTeam(stack.db, { ownerId: outsider.id, name: 'Elsewhere' });
    await addTeamMember(stack.db, { teamId: team.id, userId: admin.id, role: 'admin' });
    await addTeamMember(stack.db, { teamId: team.id, userId: member.id, role: 'member' });
    const agent = await createAgentVia(team.id, owner.id, { name: 'Helper', avatarUrl: 'https://example.com/a.png', permissions: ['GET /my'] });
    const issued = await issueVia(team.id, agent.id, owner.id);
    const foreignAgent = await createAgentVia(otherTeam.id, outsider.id, { name: 'Foreign', permissions: ['GET /my'] });
    const foreignIssued = await issueVia(otherTeam.id, foreignAgent.id, outsider.id);
    return { owner, admin, member, outsider, team, otherTeam, agent, ...issued, foreignAgent, foreignBindingId: foreignIssued.bindingId, foreignToken: foreignIssued.token };
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

  describe('PATCH /teams/:teamId/agents/:agentId', () => {
    it('renames the agent and its virtual user; only the given fields change', async () => {
      const t = await tenant();
      const res = await call('PATCH', `/teams/${t.team.id}/agents/${t.agent.id}`, await jwt(t.admin.id), { name: ' Renamed ', description: 'Now documented' });
      expect(res.statusCode).toBe(200);
      expect(res.json().agent).toMatchObject({
        id: t.agent.id, teamId: t.team.id, name: 'Renamed', description: 'Now documented', avatarUrl: 'https://example.com/a.png', permissions: ['GET /my'],
      });
      const user = await stack.db.selectFrom('users').selectAll().where('id', '=', t.agent.userId).executeTakeFirstOrThrow();
      expect(user).toMatchObject({ name: 'Renamed', is_agent: true });
      expect(user.metadata).toMatchObject({ display_name: 'Renamed', avatar_url: 'https://example.com/a.png', agent_id: t.agent.id });
      // The owner's §2.6 listing shows the new name.
      const owned = await call('GET', '/my/credentials/agent-tokens', await jwt(t.owner.id));
      expect(owned.json().items).toEqual([expect.objectContaining({ binding_id: t.bindingId, agent_display_name: 'Renamed' })]);

      const cleared = await call('PATCH', `/teams/${t.team.id}/agents/${t.agent.id}`, await jwt(t.owner.id), { avatarUrl: null, description: null });
      expect(cleared.json().agent).toMatchObject({ name: 'Renamed', description: null, avatarUrl: null });
      const after = await stack.db.selectFrom('users').select('metadata').where('id', '=', t.agent.userId).executeTakeFirstOrThrow();
      expect(after.metadata).toMatchObject({ display_name: 'Renamed', avatar_url: null });
    });

    it('a new permission group applies to the agent\'s live tokens on their next request', async () => {
      const t = await tenant();
      expect((await call('GET', '/my', bearer(t.token))).statusCode).toBe(200);
      const res = await call('PATCH', `/teams/${t.team.id}/agents/${t.agent.id}`, await jwt(t.owner.id), { permissions: ['POST /api/released-app/*/run'] });
      expect(res.json().agent.permissions).toEqual(['POST /api/released-app/*/run']);
      const denied = await call('GET', '/my', bearer(t.token));
      expect(denied.statusCode).toBe(403);
      expect(denied.json().error).toMatch(/^Permission denied: /);
      await call('PATCH', `/teams/${t.team.id}/agents/${t.agent.id}`, await jwt(t.owner.id), { permissions: ['GET /my'] });
      expect((await call('GET', '/my', bearer(t.token))).statusCode).toBe(200);
    });
  });

  describe('DELETE /teams/:teamId/agents/:agentId', () => {
    it('soft-deletes the agent, ends every binding, and its tokens are 401 on the very next request', async () => {
      const t = await tenant();
      const second = await issueVia(t.team.id, t.agent.id, t.admin.id);
      const revoked = await issueVia(t.team.id, t.agent.id, t.owner.id);
      await call('POST', `/teams/${t.team.id}/agents/${revoked.bindingId}/revoke-token`, await jwt(t.owner.id));
      for (const token of [t.token, second.token]) expect((await call('GET', '/my', bearer(token))).statusCode).toBe(200);

      const res = await call('DELETE', `/teams/${t.team.id}/agents/${t.agent.id}`, await jwt(t.admin.id));
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ success: true, revokedBindings: 3 });

      for (const token of [t.token, second.token]) {
        const next = await call('GET', '/my', bearer(token));
        expect(next.statusCode).toBe(401);
        expect(next.json()).toEqual(invalidToken);
      }
      const agentRow = await stack.db.selectFrom('agents').selectAll().where('id', '=', t.agent.id).executeTakeFirstOrThrow();
      expect(agentRow.deleted_at).toBeInstanceOf(Date);
      const bindings = await stack.db.selectFrom('agent_bindings').selectAll().where('agent_id', '=', t.agent.id).execute();
      expect(bindings).toHaveLength(3);
      for (const b of bindings) expect(b).toMatchObject({ token_hash: null, revoked_at: expect.any(Date), deleted_at: expect.any(Date) });
      // The team's other agent tokens (another team's here) are untouched.
      expect((await call('GET', '/my', bearer(t.foreignToken))).statusCode).toBe(200);

      expect((await call('GET', `/teams/${t.team.id}/agents`, await jwt(t.owner.id))).json().agents).toEqual([]);
      expect((await call('GET', '/my/credentials/agent-tokens', await jwt(t.owner.id))).json().items).toEqual([]);
      expect((await call('GET', `/teams/${t.team.id}/agents/bindings`, await jwt(t.owner.id))).json().bindings).toEqual([]);

      const before = await dbState();
      for (const [method, url] of [
        ['DELETE', `/teams/${t.team.id}/agents/${t.agent.id}`], ['PATCH', `/teams/${t.team.id}/agents/${t.agent.id}`],
        ['POST', `/teams/${t.team.id}/agents/${t.agent.id}/tokens`],
      ] as const) {
        const again = await call(method, url, await jwt(t.owner.id), method === 'PATCH' ? { name: 'Back' } : undefined);
        expect(again.statusCode, `${method} ${url}`).toBe(404);
        expect(again.json()).toEqual(agentNotFound);
      }
      await expectUnchanged(before);
    });
  });

  it('a token issued while the agent is being deleted never outlives it', async () => {
    const t = await tenant();
    const headers = await jwt(t.owner.id);
    const answers = await Promise.all([
      ...Array.from({ length: 8 }, () => call('POST', `/teams/${t.team.id}/agents/${t.agent.id}/tokens`, headers)),
      call('DELETE', `/teams/${t.team.id}/agents/${t.agent.id}`, headers),
      ...Array.from({ length: 8 }, () => call('POST', `/teams/${t.team.id}/agents/${t.agent.id}/tokens`, headers)),
    ]);
    expect(answers[8]!.statusCode).toBe(200);
    for (const res of answers.filter((_, i) => i !== 8)) expect([201, 404]).toContain(res.statusCode);
    const live = await stack.db.selectFrom('agent_bindings').select('id')
      .where('agent_id', '=', t.agent.id).where((eb) => eb.or([eb('token_hash', 'is not', null), eb('deleted_at', 'is', null)])).execute();
    expect(live).toEqual([]);
    for (const res of answers.filter((r) => r.statusCode === 201)) {
      expect((await call('GET', '/my', bearer(res.json().token))).statusCode).toBe(401);
    }
  });

  describe('GET /teams/:teamId/agents/bindings and PATCH /teams/:teamId/agents/bindings/:bindingId', () => {
    it("lists the team's bindings whoever issued them, revoked ones included, removed ones and other teams' not", async () => {
      const t = await tenant();
      const other = await createAgentVia(t.team.id, t.admin.id, { name: 'Other' });
      const byAdmin = await issueVia(t.team.id, other.id, t.admin.id);
      const revoked = await issueVia(t.team.id, t.agent.id, t.admin.id);
      await call('POST', `/teams/${t.team.id}/agents/${revoked.bindingId}/revoke-token`, await jwt(t.owner.id));
      const removed = await issueVia(t.team.id, t.agent.id, t.owner.id);
      await stack.db.updateTable('agent_bindings').set({ deleted_at: new Date() }).where('id', '=', removed.bindingId).execute();

      const res = await call('GET', `/teams/${t.team.id}/agents/bindings`, await jwt(t.admin.id));
      expect(res.statusCode).toBe(200);
      const { bindings } = res.json();
      expect(bindings.map((b: { id: string }) => b.id)).toEqual([revoked.bindingId, byAdmin.bindingId, t.bindingId]);
      expect(bindings[0]).toEqual({
        id: revoked.bindingId, agentId: t.agent.id, agentUserId: t.agent.userId, agentName: 'Helper', ownerUserId: t.admin.id,
        ownerDisplayName: 'admin', canSend: true, canReceive: true, active: false, createdAt: expect.any(String), revokedAt: expect.any(String),
      });
      expect(bindings[2]).toMatchObject({ id: t.bindingId, ownerUserId: t.owner.id, active: true, revokedAt: null });

      const one = await call('GET', `/teams/${t.team.id}/agents/bindings?agentId=${other.id}`, await jwt(t.owner.id));
      expect(one.json().bindings.map((b: { id: string }) => b.id)).toEqual([byAdmin.bindingId]);
    });

    it('sets can_send / can_receive; the owner\'s and the agent\'s listings show them', async () => {
      const t = await tenant();
      const url = `/teams/${t.team.id}/agents/bindings/${t.bindingId}`;
      const res = await call('PATCH', url, await jwt(t.admin.id), { canSend: false });
      expect(res.statusCode).toBe(200);
      expect(res.json().binding).toMatchObject({ id: t.bindingId, canSend: false, canReceive: true, active: true });
      const both = await call('PATCH', url, await jwt(t.owner.id), { canSend: true, canReceive: false });
      expect(both.json().binding).toMatchObject({ canSend: true, canReceive: false });
      const row = await stack.db.selectFrom('agent_bindings').selectAll().where('id', '=', t.bindingId).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ can_send: true, can_receive: false, deleted_at: null });
      expect((await call('GET', '/my/credentials/agent-tokens', await jwt(t.owner.id))).json().items)
        .toEqual([expect.objectContaining({ binding_id: t.bindingId, can_send: true, can_receive: false })]);
      expect((await call('GET', '/my/credentials/agent-bindings-as-agent', await jwt(t.agent.userId))).json().items)
        .toEqual([expect.objectContaining({ binding_id: t.bindingId, can_send: true, can_receive: false })]);
      // The token itself keeps working: the switches govern messages, not authentication.
      expect((await call('GET', '/my', bearer(t.token))).statusCode).toBe(200);
    });
  });

  describe('bad input changes nothing', () => {
    /** Every new route with team A's ids, as [method, url, body]. */
    const routes = (t: Awaited<ReturnType<typeof tenant>>, ids = { teamId: t.team.id, agentId: t.agent.id, bindingId: t.bindingId }) => [
      ['PATCH', `/teams/${ids.teamId}/agents/${ids.agentId}`, { name: 'Mine now' }],
      ['DELETE', `/teams/${ids.teamId}/agents/${ids.agentId}`, undefined],
      ['GET', `/teams/${ids.teamId}/agents/bindings`, undefined],
      ['PATCH', `/teams/${ids.teamId}/agents/bindings/${ids.bindingId}`, { canSend: false }],
    ] as const;

    it('403 Forbidden for a plain member on every agent management route; the token keeps working', async () => {
      const t = await tenant();
      const before = await dbState();
      for (const [method, url, body] of routes(t)) {
        const res = await call(method, url, await jwt(t.member.id), body);
        expect(res.statusCode, `${method} ${url}`).toBe(403);
        expect(res.json()).toEqual({ error: 'Forbidden', message: 'Only the team owner or admin can manage agents' });
      }
      await expectUnchanged(before);
      expect((await call('GET', '/my', bearer(t.token))).statusCode).toBe(200);
    });

    it('403 for an API key or an agent token of the team; 401 without a credential', async () => {
      const t = await tenant();
      const key = await createApiKey(stack.db, { teamId: t.team.id, createdBy: t.owner.id, name: 'k' });
      const before = await dbState();
      for (const [method, url, body] of routes(t)) {
        for (const headers of [bearer(key.token), bearer(t.token)]) {
          const res = await call(method, url, headers, body);
          expect(res.statusCode, `${method} ${url}`).toBe(403);
          expect(res.json().error).toBe('This endpoint only accepts JWT authentication');
        }
        expect((await call(method, url, {}, body)).statusCode).toBe(401);
      }
      await expectUnchanged(before);
    });

    it('404 Team not found for an outsider, an unknown or malformed team id', async () => {
      const t = await tenant();
      const before = await dbState();
      for (const [teamId, userId] of [[t.team.id, t.outsider.id], [MISSING, t.owner.id], ['nope', t.owner.id]] as const) {
        for (const [method, url, body] of routes(t, { teamId, agentId: t.agent.id, bindingId: t.bindingId })) {
          const res = await call(method, url, await jwt(userId), body);
          expect(res.statusCode, `${method} ${url}`).toBe(404);
          expect(res.json()).toEqual(teamNotFound);
        }
      }
      await expectUnchanged(before);
    });

    it("another team's agent or binding id answers exactly like a random one (404)", async () => {
      const t = await tenant();
      const before = await dbState();
      const headers = await jwt(t.owner.id);
      for (const agentId of [t.foreignAgent.id, MISSING, 'nope']) {
        for (const [method, url, body] of [
          ['PATCH', `/teams/${t.team.id}/agents/${agentId}`, { name: 'Mine now' }],
          ['DELETE', `/teams/${t.team.id}/agents/${agentId}`, undefined],
          ['GET', `/teams/${t.team.id}/agents/bindings?agentId=${agentId}`, undefined],
        ] as const) {
          const res = await call(method, url, headers, body);
          expect(res.statusCode, `${method} ${url}`).toBe(404);
          expect(res.json()).toEqual(agentNotFound);
        }
      }
      for (const bindingId of [t.foreignBindingId, MISSING, 'nope']) {
        const res = await call('PATCH', `/teams/${t.team.id}/agents/bindings/${bindingId}`, headers, { canReceive: false });
        expect(res.statusCode).toBe(404);
        expect(res.json()).toEqual(bindingNotFound);
      }
      await expectUnchanged(before);
      expect((await call('GET', '/my', bearer(t.foreignToken))).statusCode).toBe(200);
    });

    it('404 for a removed binding', async () => {
      const t = await tenant();
      await call('DELETE', `/my/credentials/agent-bindings-as-agent/${t.bindingId}`, await jwt(t.agent.userId));
      const before = await dbState();
      const res = await call('PATCH', `/teams/${t.team.id}/agents/bindings/${t.bindingId}`, await jwt(t.owner.id), { canSend: false });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual(bindingNotFound);
      await expectUnchanged(before);
    });

    it.each([
      ['empty body', 'agent', {}, 'body'],
      ['unknown field', 'agent', { name: 'x', teamId: MISSING }, 'body'],
      ['blank name', 'agent', { name: '  ' }, 'body.name'],
      ['invalid grant', 'agent', { permissions: ['GET /my', 'get /my'] }, 'body.permissions.1'],
      ['avatarUrl not http(s)', 'agent', { avatarUrl: 'javascript:alert(1)' }, 'body.avatarUrl'],
      ['empty switches', 'binding', {}, 'body'],
      ['switch not a boolean', 'binding', { canSend: 'no' }, 'body.canSend'],
      ['unknown switch', 'binding', { canSend: true, active: false }, 'body'],
    ] as const)('400 invalid_request with field details (%s)', async (_case, target, body, field) => {
      const t = await tenant();
      const before = await dbState();
      const url = target === 'agent' ? `/teams/${t.team.id}/agents/${t.agent.id}` : `/teams/${t.team.id}/agents/bindings/${t.bindingId}`;
      const res = await call('PATCH', url, await jwt(t.owner.id), body);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_request', details: [expect.objectContaining({ field })] });
      await expectUnchanged(before);
    });
  });

  it('the OpenAPI document lists the new routes with their schemas', async () => {
    const res = await call('GET', '/docs/json');
    expect(res.statusCode).toBe(200);
    const paths = res.json().paths;
    expect(Object.keys(paths['/teams/{teamId}/agents/{agentId}'] ?? {})).toEqual(expect.arrayContaining(['patch', 'delete']));
    expect(paths['/teams/{teamId}/agents/{agentId}'].patch.requestBody.content['application/json'].schema.properties)
      .toEqual(expect.objectContaining({ name: expect.any(Object), description: expect.any(Object), avatarUrl: expect.any(Object), permissions: expect.any(Object) }));
    expect(paths['/teams/{teamId}/agents/bindings'].get.responses['200']).toBeDefined();
    expect(paths['/teams/{teamId}/agents/bindings/{bindingId}'].patch.requestBody.content['application/json'].schema.properties)
      .toEqual(expect.objectContaining({ canSend: expect.any(Object), canReceive: expect.any(Object) }));
  });
});
