import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addTeamMember } from '../../shared/identity/service.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

describe('POST /my/default-project/ensure', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  const ensure = (token: string, options: { body?: object; headers?: Record<string, string> } = {}) =>
    stack.app.inject({ method: 'POST', url: '/my/default-project/ensure', headers: { authorization: `Bearer ${token}`, ...options.headers }, payload: options.body ?? {} });
  const defaultProjects = (userId: string) => stack.db.selectFrom('projects').selectAll()
    .where('created_by', '=', userId).where('system_purpose', '=', 'personal_default').execute();

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
  });
  afterAll(() => stack?.close());

  it('creates on demand in a team the caller owns, then returns the same project (idempotent)', async () => {
    const user = await make.user('ada');
    const owned = await make.team(user.id, 'Own team');
    const jwt = await make.jwt(user.id);
    expect(await defaultProjects(user.id)).toEqual([]); // not created at sign-up
    const first = await ensure(jwt);
    expect(first.statusCode).toBe(200);
    const body = first.json();
    expect(body).toEqual({
      success: true,
      data: {
        team: { id: owned.id, slug: owned.slug, name: 'Own team' },
        project: { id: expect.any(String), team_id: owned.id, slug: expect.any(String), name: 'My project', system_purpose: 'personal_default' },
        permissions: { storage_write: true, deletion_locked: true },
      },
    });
    expect((await ensure(jwt)).json()).toEqual(body);
    expect(await defaultProjects(user.id)).toHaveLength(1);
  });

  it('never uses a team the caller was only invited to: it makes a team of their own', async () => {
    const host = await make.user('host');
    const hostTeam = await make.team(host.id, 'Host team');
    const guest = await make.user('guest');
    await addTeamMember(stack.db, { teamId: hostTeam.id, userId: guest.id, role: 'admin' });
    const { data } = (await ensure(await make.jwt(guest.id))).json();
    expect(data.team.id).not.toBe(hostTeam.id);
    const team = await stack.db.selectFrom('teams').selectAll().where('id', '=', data.team.id).executeTakeFirstOrThrow();
    expect(team.owner_id).toBe(guest.id);
  });

  it('concurrent first calls create exactly one project', async () => {
    const user = await make.user('racer');
    const jwt = await make.jwt(user.id);
    const results = await Promise.all(Array.from({ length: 8 }, () => ensure(jwt)));
    expect(new Set(results.map((r) => r.json().data.project.id)).size).toBe(1);
    expect(await defaultProjects(user.id)).toHaveLength(1);
  });

  it('lang: body, then Accept-Language, then X-Server-Mode', async () => {
    const names = async (options: Parameters<typeof ensure>[1]) => {
      const user = await make.user('lang');
      return (await ensure(await make.jwt(user.id), options)).json().data.project.name;
    };
    expect(await names({ body: { lang: 'zh-CN' }, headers: { 'accept-language': 'en-US' } })).toBe('我的项目');
    expect(await names({ headers: { 'accept-language': 'zh-TW,en;q=0.5' } })).toBe('我的项目');
    expect(await names({ headers: { 'x-server-mode': 'cn' } })).toBe('我的项目');
    expect(await names({ headers: { 'x-server-mode': 'global' } })).toBe('My project');
  });

  it('works with an OAuth token that has mobile:full, for the token user only', async () => {
    const user = await make.user('mobile');
    const { token } = await make.oauthToken(user.id, ['mobile:full']);
    const res = await ensure(token, { body: { userId: '00000000-0000-4000-8000-000000000000' } });
    expect(res.statusCode).toBe(200);
    expect(await defaultProjects(user.id)).toHaveLength(1);
  });

  it('409 personal_default_project_invalid_team when its team is deleted or no longer the caller’s', async () => {
    const user = await make.user('moved');
    const jwt = await make.jwt(user.id);
    const { data } = (await ensure(jwt)).json();
    await stack.db.updateTable('teams').set({ deleted_at: new Date() }).where('id', '=', data.team.id).execute();
    const res = await ensure(jwt);
    expect([res.statusCode, res.json().error]).toEqual([409, 'personal_default_project_invalid_team']);
    expect(await defaultProjects(user.id)).toHaveLength(1);
  });

  it('the database refuses to make it public or delete it', async () => {
    const user = await make.user('keeper');
    const { data } = (await ensure(await make.jwt(user.id))).json();
    await expect(stack.db.updateTable('projects').set({ visibility: 'public' }).where('id', '=', data.project.id).execute()).rejects.toThrow(/projects_personal_default_private/);
    await expect(stack.db.updateTable('projects').set({ deleted_at: new Date() }).where('id', '=', data.project.id).execute()).rejects.toThrow(/projects_personal_default_private/);
    await stack.db.updateTable('projects').set({ name: 'Renamed' }).where('id', '=', data.project.id).execute(); // renaming works
  });

  it('API key, agent and schedule tokens are refused: 403, nothing created', async () => {
    const user = await make.user('machine');
    const team = await make.team(user.id);
    for (const token of [(await make.apiKey(team.id, user.id)).token, (await make.agentToken(team.id, user.id, ['* /**'])).token, await make.scheduleToken(team.id)]) {
      const res = await ensure(token);
      expect([res.statusCode, res.json().error]).toEqual([403, 'This endpoint only accepts JWT or OAuth authentication']);
    }
    const oauthNoScope = await make.oauthToken(user.id, ['profile:read']);
    const res = await ensure(oauthNoScope.token);
    expect([res.statusCode, res.json().error]).toEqual([403, 'insufficient_scope']);
    expect(await defaultProjects(user.id)).toEqual([]);
  });
});
