import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleGraph } from '../../shared/documents/example-graph.js';
import { addTeamMember } from '../../shared/identity/service.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// GET /api/released-app/cross-team/bindings: what the caller's team may call, by credential kind.
describe('GET /api/released-app/cross-team/bindings', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let ownerJwt: string;
  let ownerTeamId: string;
  let ownerKey: string;
  let granteeTeamId: string;
  let granteeKey: string;
  let bindingId: string;
  let deploymentId: string;

  const listWith = (headers: Record<string, string>) => stack.app.inject({ method: 'GET', url: '/api/released-app/cross-team/bindings', headers });
  const idsFor = async (token: string) => {
    const res = await listWith({ authorization: `Bearer ${token}` });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json().bindings as { id: string }[]).map((b) => b.id);
  };

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
    const owner = await make.fundedTenant();
    [ownerTeamId, ownerKey, ownerJwt] = [owner.team.id, owner.apiKey, await make.jwt(owner.owner.id)];
    const grantee = await make.fundedTenant();
    [granteeTeamId, granteeKey] = [grantee.team.id, grantee.apiKey];
    let documentId: string;
    ({ documentId, deploymentId } = await publishDirect(stack.db, exampleGraph, { teamId: ownerTeamId, publishedBy: owner.owner.id }));
    const res = await stack.app.inject({
      method: 'POST', url: `/teams/${ownerTeamId}/cross-team-bindings`, headers: { authorization: `Bearer ${ownerJwt}` },
      payload: { documentId, granteeTeamId, name: 'Shared app' },
    });
    expect(res.statusCode, res.body).toBe(201);
    bindingId = res.json().binding.id;
  });
  afterAll(() => stack?.close());

  it('an API key of the grantee team sees the binding with its current deployment', async () => {
    const res = await listWith({ 'x-api-key': granteeKey });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().bindings).toEqual([expect.objectContaining({
      id: bindingId, name: 'Shared app', ownerTeamId, granteeTeamId, deploymentId, pinned: false, documentName: 'App',
    })]);
  });

  it('an OAuth user who is a member of the grantee team sees it; the scope is required', async () => {
    const member = await make.user('member');
    await addTeamMember(stack.db, { teamId: granteeTeamId, userId: member.id, role: 'member' });
    expect(await idsFor((await make.oauthToken(member.id, ['chat:completions'])).token)).toEqual([bindingId]);
    const noScope = await listWith({ authorization: `Bearer ${(await make.oauthToken(member.id, [])).token}` });
    expect([noScope.statusCode, noScope.json().error]).toEqual([403, 'insufficient_scope']);
    const outsider = await make.user('outsider');
    expect(await idsFor((await make.oauthToken(outsider.id, ['chat:completions'])).token)).toEqual([]);
  });

  it("a schedule token of the grantee team sees it; the owner team's key does not", async () => {
    expect(await idsFor(await make.scheduleToken(granteeTeamId))).toEqual([bindingId]);
    expect(await idsFor(ownerKey)).toEqual([]);
  });

  it('no credential or a JWT is 401 Unauthorized', async () => {
    for (const headers of [{}, { authorization: `Bearer ${ownerJwt}` }] as Record<string, string>[]) {
      const res = await listWith(headers);
      expect([res.statusCode, res.json().error]).toEqual([401, 'Unauthorized']);
    }
  });

  it('a revoked binding disappears at once', async () => {
    const res = await stack.app.inject({
      method: 'DELETE', url: `/teams/${ownerTeamId}/cross-team-bindings/${bindingId}`, headers: { authorization: `Bearer ${ownerJwt}` },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(await idsFor(granteeKey)).toEqual([]);
  });
});
