import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../shared/crypto.js';
import { hasValidTokenShape } from '../../shared/credentials/tokens.js';
import { addTeamMember, createTeam, createUser } from '../../shared/identity/service.js';
import { runCli } from '../harness/cli.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

const MISSING = '00000000-0000-4000-8000-000000000000';

describe('operator CLI: agent create and agent issue-token', () => {
  let stack: TestStack;
  let teamId: string;
  let ownerId: string;
  let memberId: string;
  let strangerId: string;
  const cli = (...args: string[]) => runCli(args, stack.env);
  const dbState = async () => ({
    agents: await stack.db.selectFrom('agents').selectAll().orderBy('id').execute(),
    bindings: await stack.db.selectFrom('agent_bindings').selectAll().orderBy('id').execute(),
    users: await stack.db.selectFrom('users').select(['id']).orderBy('id').execute(),
  });

  beforeAll(async () => {
    stack = await createTestStack();
    const owner = await createUser(stack.db, { email: 'cli-owner@example.com', name: 'Owner' });
    const member = await createUser(stack.db, { email: 'cli-member@example.com', name: 'Member' });
    const stranger = await createUser(stack.db, { email: 'cli-stranger@example.com' });
    const team = await createTeam(stack.db, { ownerId: owner.id, name: 'CLI team' });
    await addTeamMember(stack.db, { teamId: team.id, userId: member.id, role: 'member' });
    [teamId, ownerId, memberId, strangerId] = [team.id, owner.id, member.id, stranger.id];
    // See agents.test.ts: a stand-in GET /my on the same access row until the lead's route is registered.
    if (!stack.app.hasRoute({ method: 'GET', url: '/my' })) {
      stack.app.get('/my', { config: { access: 'currentUser' } }, async (request) => {
        const p = request.principal!;
        return p.kind === 'agent' ? { userId: p.userId, teamId: p.teamId, bindingId: p.bindingId } : { kind: p.kind };
      });
    }
  });
  afterAll(() => stack?.close());

  it('creates an agent and issues a token that the API accepts', async () => {
    const created = await cli('agent', 'create', '--team', teamId, '--name', 'Ops bot', '--permissions', 'GET /my, POST /api/released-app/*/run');
    expect(created.code).toBe(0);
    expect(created.json).toEqual({ agentId: expect.any(String), agentUserId: expect.any(String) });
    const { agentId, agentUserId } = created.json as { agentId: string; agentUserId: string };
    const agent = await stack.db.selectFrom('agents').selectAll().where('id', '=', agentId).executeTakeFirstOrThrow();
    expect(agent).toMatchObject({ team_id: teamId, user_id: agentUserId, name: 'Ops bot', permissions: ['GET /my', 'POST /api/released-app/*/run'], created_by: null });
    const user = await stack.db.selectFrom('users').selectAll().where('id', '=', agentUserId).executeTakeFirstOrThrow();
    expect(user).toMatchObject({ is_agent: true, email: `agent+${agentId}@agents.invalid` });

    // Any member of the agent's team may own a token issued by the operator.
    const issued = await cli('agent', 'issue-token', '--agent', agentId, '--owner', memberId);
    expect(issued.code).toBe(0);
    expect(issued.json).toEqual({ bindingId: expect.any(String), token: expect.stringMatching(/^wfa-/) });
    const { bindingId, token } = issued.json as { bindingId: string; token: string };
    expect(hasValidTokenShape('agent', token)).toBe(true);
    const binding = await stack.db.selectFrom('agent_bindings').selectAll().where('id', '=', bindingId).executeTakeFirstOrThrow();
    expect(binding).toMatchObject({ agent_id: agentId, agent_user_id: agentUserId, owner_user_id: memberId, team_id: teamId, token_hash: sha256Hex(token) });

    const me = await stack.app.inject({ method: 'GET', url: '/my', headers: { authorization: `Bearer ${token}` } });
    expect(me.statusCode).toBe(200);
    expect(me.json()).toEqual({ userId: agentUserId, teamId, bindingId });
  });

  it('agent create without --permissions grants nothing', async () => {
    const created = await cli('agent', 'create', '--team', teamId, '--name', 'Quiet');
    expect(created.code).toBe(0);
    const agent = await stack.db.selectFrom('agents').select('permissions').where('id', '=', created.json!.agentId as string).executeTakeFirstOrThrow();
    expect(agent.permissions).toEqual([]);
  });

  // One at a time: each is a child process, and the machine has two cores shared with other suites.
  describe('bad input: non-zero exit, a message naming the flag or the row, nothing written', () => {
    const cases: Array<[string, () => string[], number, RegExp | string]> = [
      ['missing --team', () => ['agent', 'create', '--name', 'x'], 2, 'Missing required flag --team'],
      ['malformed --team', () => ['agent', 'create', '--team', 'nope', '--name', 'x'], 2, /^Invalid --team: expected a UUID/],
      ['missing --name', () => ['agent', 'create', '--team', teamId], 2, 'Missing required flag --name'],
      ['blank --name', () => ['agent', 'create', '--team', teamId, '--name', '  '], 2, /^Invalid --name/],
      ['invalid grant in --permissions', () => ['agent', 'create', '--team', teamId, '--name', 'x', '--permissions', 'GET /my,fetch everything'], 2, /^Invalid --permissions/],
      ['--permissions without a value', () => ['agent', 'create', '--team', teamId, '--name', 'x', '--permissions'], 2, 'Flag --permissions needs a value'],
      ['unknown flag', () => ['agent', 'create', '--team', teamId, '--name', 'x', '--role', 'admin'], 2, /^Unknown flag --role/],
      ['unknown team', () => ['agent', 'create', '--team', MISSING, '--name', 'x'], 1, 'Team not found'],
      ['missing --owner', () => ['agent', 'issue-token', '--agent', MISSING], 2, 'Missing required flag --owner'],
      ['malformed --agent', () => ['agent', 'issue-token', '--agent', '123', '--owner', ownerId], 2, /^Invalid --agent: expected a UUID/],
      ['unknown agent', () => ['agent', 'issue-token', '--agent', MISSING, '--owner', ownerId], 1, 'Agent not found'],
      ['unknown owner', () => ['agent', 'issue-token', '--agent', MISSING, '--owner', MISSING], 1, `User ${MISSING} not found`],
    ];
    it.each(cases)('%s', async (_name, args, code, message) => {
      const before = await dbState();
      const res = await cli(...args());
      expect(res.code).toBe(code);
      expect(res.stdout).toBe('');
      expect(res.error).toMatchObject({ error: expect.any(String), message: typeof message === 'string' ? message : expect.stringMatching(message) });
      expect(await dbState()).toEqual(before);
    });
  });

  it('refuses to issue a token to someone outside the agent\'s team', async () => {
    const created = await cli('agent', 'create', '--team', teamId, '--name', 'Guarded');
    const before = await dbState();
    const res = await cli('agent', 'issue-token', '--agent', created.json!.agentId as string, '--owner', strangerId);
    expect(res.code).toBe(1);
    expect(res.error).toEqual({ error: 'not_a_member', message: expect.stringContaining(strangerId) });
    expect(await dbState()).toEqual(before);
  });
});
