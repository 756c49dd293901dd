import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addTeamMember, createProject } from '../../shared/identity/service.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// GET /teams/:teamId/projects: a client finds a project id without the CLI; the personal default
// project (spec §4.4) is one of them.
describe("a team's project list", () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  const list = (teamId: string, token: string) =>
    stack.app.inject({ method: 'GET', url: `/teams/${teamId}/projects`, headers: { authorization: `Bearer ${token}` } });
  const teamMissing = { error: 'Team not found', message: 'Team not found' };

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
  });
  afterAll(() => stack?.close());

  it('lists the live projects, the personal default project among them, for members and the team\'s API keys', async () => {
    const owner = await make.user('owner');
    const ownerJwt = await make.jwt(owner.id);
    const ensured = await stack.app.inject({ method: 'POST', url: '/my/default-project/ensure', headers: { authorization: `Bearer ${ownerJwt}` }, payload: {} });
    expect(ensured.statusCode).toBe(200);
    const { team, project: defaultProject } = ensured.json().data as { team: { id: string }; project: { id: string } };
    const second = await createProject(stack.db, { teamId: team.id, name: 'Second', createdBy: owner.id });
    const gone = await createProject(stack.db, { teamId: team.id, name: 'Gone', createdBy: owner.id });
    await stack.db.updateTable('projects').set({ deleted_at: new Date() }).where('id', '=', gone.id).execute();
    const member = await make.user('member');
    await addTeamMember(stack.db, { teamId: team.id, userId: member.id, role: 'member' });

    const byOwner = await list(team.id, ownerJwt);
    expect(byOwner.statusCode).toBe(200);
    expect(byOwner.json().projects.map((p: { id: string }) => p.id)).toEqual([defaultProject.id, second.id]);
    expect(byOwner.json().projects[0]).toMatchObject({ teamId: team.id, systemPurpose: 'personal_default', deletionLocked: true });
    expect(byOwner.json().projects[1]).toMatchObject({ name: 'Second', systemPurpose: null, deletionLocked: false });
    expect((await list(team.id, await make.jwt(member.id))).json()).toEqual(byOwner.json());
    const key = (await make.apiKey(team.id, owner.id)).token;
    expect((await list(team.id, key)).json()).toEqual(byOwner.json());
  });

  it('anyone else gets what a missing team gets: another team\'s key, a stranger, a removed member, a deleted team', async () => {
    const owner = await make.user('owner');
    const team = await make.team(owner.id, 'Listed');
    const stranger = await make.user('stranger');
    const otherTeam = await make.team(stranger.id, 'Other');
    const otherKey = (await make.apiKey(otherTeam.id, stranger.id)).token;
    const removed = await make.user('removed');
    await addTeamMember(stack.db, { teamId: team.id, userId: removed.id, role: 'member' });
    await stack.db.deleteFrom('team_members').where('team_id', '=', team.id).where('user_id', '=', removed.id).execute();

    const random = await list(randomUUID(), await make.jwt(owner.id));
    expect([random.statusCode, random.json()]).toEqual([404, teamMissing]);
    for (const token of [otherKey, await make.jwt(stranger.id), await make.jwt(removed.id)]) {
      const res = await list(team.id, token);
      expect([res.statusCode, res.json()]).toEqual([404, teamMissing]);
    }
    await stack.db.updateTable('teams').set({ deleted_at: new Date() }).where('id', '=', team.id).execute();
    const deleted = await list(team.id, await make.jwt(owner.id));
    expect([deleted.statusCode, deleted.json()]).toEqual([404, teamMissing]);
  });

  it('bad input: a team id that is not a uuid is 400; no credential is 401', async () => {
    const owner = await make.user('owner');
    expect((await list('not-a-uuid', await make.jwt(owner.id))).statusCode).toBe(400);
    expect((await stack.app.inject({ method: 'GET', url: `/teams/${randomUUID()}/projects` })).statusCode).toBe(401);
  });

  it('the OpenAPI document lists the route with its response schema', async () => {
    const res = await stack.app.inject({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    const route = res.json().paths['/teams/{teamId}/projects']?.get;
    expect(route?.responses['200'].content['application/json'].schema.properties.projects.items.properties)
      .toEqual(expect.objectContaining({ id: expect.any(Object), slug: expect.any(Object), systemPurpose: expect.any(Object) }));
  });
});
