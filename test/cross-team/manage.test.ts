import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleGraph } from '../../shared/documents/example-graph.js';
import { addTeamMember } from '../../shared/identity/service.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// Granting, listing and revoking bindings: owner or admin of the owning team, JWT only.
describe('/teams/:teamId/cross-team-bindings', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let ownerTeamId: string;
  let granteeTeamId: string;
  let documentId: string;
  const jwts = {} as Record<'owner' | 'admin' | 'member' | 'stranger', string>;

  const grant = (body: object, token = jwts.owner, teamId = ownerTeamId) => stack.app.inject({
    method: 'POST', url: `/teams/${teamId}/cross-team-bindings`, headers: { authorization: `Bearer ${token}` }, payload: body,
  });
  const list = (token = jwts.owner) => stack.app.inject({ method: 'GET', url: `/teams/${ownerTeamId}/cross-team-bindings`, headers: { authorization: `Bearer ${token}` } });
  const revoke = (bindingId: string, token = jwts.owner) => stack.app.inject({
    method: 'DELETE', url: `/teams/${ownerTeamId}/cross-team-bindings/${bindingId}`, headers: { authorization: `Bearer ${token}` },
  });
  const bindingCount = async () => (await stack.db.selectFrom('cross_team_bindings').select('id').execute()).length;
  /** A fresh grantee team each time, so grants do not collide on the one-live-binding rule. */
  const newGrantee = async () => (await make.team((await make.user('grantee')).id, 'Grantee')).id;

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
    const owner = await make.user('owner');
    ownerTeamId = (await make.team(owner.id, 'Owner team')).id;
    granteeTeamId = await newGrantee();
    for (const role of ['admin', 'member'] as const) {
      const user = await make.user(role);
      await addTeamMember(stack.db, { teamId: ownerTeamId, userId: user.id, role });
      jwts[role] = await make.jwt(user.id);
    }
    jwts.owner = await make.jwt(owner.id);
    jwts.stranger = await make.jwt((await make.user('stranger')).id);
    ({ documentId } = await publishDirect(stack.db, exampleGraph, { teamId: ownerTeamId, publishedBy: owner.id }));
  });
  afterAll(() => stack?.close());

  it('the owner grants: the view names both teams, the document and its newest deployment', async () => {
    const newer = await publishDirect(stack.db, exampleGraph, { teamId: ownerTeamId, documentId, version: [1, 1] });
    const res = await grant({ documentId, granteeTeamId, name: 'Partner access' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().binding).toMatchObject({
      name: 'Partner access', ownerTeamId, ownerTeamName: 'Owner team', granteeTeamId, granteeTeamName: 'Grantee',
      documentId, documentName: 'App', deploymentId: newer.deploymentId, pinned: false,
    });
    const listed = await list();
    expect(listed.json().bindings.map((b: { id: string }) => b.id)).toContain(res.json().binding.id);
  });

  it('an admin grants too; the name defaults to the document name; a repeat is 409', async () => {
    const grantee = await newGrantee();
    const res = await grant({ documentId, granteeTeamId: grantee }, jwts.admin);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().binding.name).toBe('App');
    const again = await grant({ documentId, granteeTeamId: grantee }, jwts.admin);
    expect([again.statusCode, again.json().error]).toEqual([409, 'binding_exists']);
  });

  it('a plain member gets 403, someone outside the team 404, and nothing is written', async () => {
    const before = await bindingCount();
    const member = await grant({ documentId, granteeTeamId: await newGrantee() }, jwts.member);
    expect([member.statusCode, member.json().error]).toEqual([403, 'Forbidden']);
    const stranger = await grant({ documentId, granteeTeamId: await newGrantee() }, jwts.stranger);
    expect([stranger.statusCode, stranger.json().error]).toEqual([404, 'Team not found']);
    expect((await list(jwts.member)).statusCode).toBe(403);
    expect((await list(jwts.stranger)).statusCode).toBe(404);
    expect(await bindingCount()).toBe(before);
  });

  it('refuses a document of another team (404), the team itself (400) and an unknown grantee (404)', async () => {
    const before = await bindingCount();
    const otherOwner = await make.user('other');
    const otherTeam = await make.team(otherOwner.id, 'Other');
    const foreign = await publishDirect(stack.db, exampleGraph, { teamId: otherTeam.id });
    const foreignDoc = await grant({ documentId: foreign.documentId, granteeTeamId });
    expect([foreignDoc.statusCode, foreignDoc.json().error]).toEqual([404, 'Document not found']);
    const self = await grant({ documentId, granteeTeamId: ownerTeamId });
    expect([self.statusCode, self.json().error]).toEqual([400, 'invalid_grantee']);
    const unknown = await grant({ documentId, granteeTeamId: '00000000-0000-4000-8000-000000000000' });
    expect([unknown.statusCode, unknown.json().error]).toEqual([404, 'grantee_team_not_found']);
    const foreignPin = await grant({ documentId, granteeTeamId: await newGrantee(), deploymentId: foreign.deploymentId });
    expect([foreignPin.statusCode, foreignPin.json().error]).toEqual([404, 'Deployment not found']);
    expect(await bindingCount()).toBe(before);
  });

  it('is JWT only: an API key of the owning team gets 403', async () => {
    const key = await make.apiKey(ownerTeamId, (await stack.db.selectFrom('teams').select('owner_id').where('id', '=', ownerTeamId).executeTakeFirstOrThrow()).owner_id);
    const res = await grant({ documentId, granteeTeamId: await newGrantee() }, key.token);
    expect([res.statusCode, res.json().error]).toEqual([403, 'This endpoint only accepts JWT authentication']);
  });

  it('revoking is idempotent, drops the binding from the list, and needs the role', async () => {
    const created = await grant({ documentId, granteeTeamId: await newGrantee() });
    const id = created.json().binding.id as string;
    expect((await revoke(id, jwts.member)).statusCode).toBe(403);
    expect((await revoke(id)).json()).toEqual({ success: true });
    const revokedAt = (await stack.db.selectFrom('cross_team_bindings').select('revoked_at').where('id', '=', id).executeTakeFirstOrThrow()).revoked_at;
    expect((await revoke(id, jwts.admin)).statusCode).toBe(200);
    // The second revoke keeps the first time.
    expect((await stack.db.selectFrom('cross_team_bindings').select('revoked_at').where('id', '=', id).executeTakeFirstOrThrow()).revoked_at).toEqual(revokedAt);
    expect((await list()).json().bindings.map((b: { id: string }) => b.id)).not.toContain(id);
    const unknown = await revoke('00000000-0000-4000-8000-000000000000');
    expect([unknown.statusCode, unknown.json().error]).toEqual([404, 'Binding not found']);
  });
});
