import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { addTeamMember, createProject } from '../../shared/identity/service.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

const graph: Graph = { blocks: [{ id: 'o', type: 'output', name: 'source', config: { value: '{{_trigger.source}}' } }], edges: [] };
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

describe('webhook trigger management: view by document, rotate secret, publish binds', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let ownerId: string;
  let teamId: string;
  let projectId: string;
  let ownerJwt: string;
  let memberId: string;
  let memberJwt: string;
  let ownKey: string;
  let strangerJwt: string;
  let foreignKey: string;

  const call = (method: 'GET' | 'POST', url: string, token: string, payload?: object) =>
    stack.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });
  const view = (documentId: string, token = ownerJwt) => call('GET', `/api/webhook-triggers/by-document/${documentId}`, token);
  const rotate = (documentId: string, token = ownerJwt) => call('POST', `/api/webhook-triggers/by-document/${documentId}/rotate-secret`, token);
  const triggerRow = (documentId: string) => stack.db.selectFrom('webhook_triggers').selectAll().where('document_id', '=', documentId).executeTakeFirst();
  const publish = (options: { documentId?: string; version?: [number, number] } = {}) => publishDirect(stack.db, graph, { teamId, publishedBy: ownerId, ...options });
  /** A draft in the team's project, created through the editor API by `token`'s user. */
  const draft = async (token = ownerJwt) => {
    const res = await call('POST', `/projects/${projectId}/documents`, token, { name: 'Hook', graph });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().document.id as string;
  };

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
    const owner = await make.user('owner');
    ownerId = owner.id;
    teamId = (await make.team(owner.id)).id;
    projectId = (await createProject(stack.db, { teamId, name: 'Hooks' })).id;
    ownerJwt = await make.jwt(owner.id);
    ownKey = (await make.apiKey(teamId, owner.id)).token;
    const member = await make.user('member');
    memberId = member.id;
    await addTeamMember(stack.db, { teamId, userId: member.id, role: 'member' });
    memberJwt = await make.jwt(member.id);
    const stranger = await make.user('stranger');
    strangerJwt = await make.jwt(stranger.id);
    foreignKey = (await make.apiKey((await make.team(stranger.id, 'Other')).id, stranger.id)).token;
  });
  afterAll(() => stack?.close());

  describe('publishing binds the trigger', () => {
    it('the first publish creates the trigger; a second re-points it to the new deployment (same id)', async () => {
      const first = await publish();
      const before = await view(first.documentId);
      expect(before.statusCode, before.body).toBe(200);
      const id = before.json().id as string;
      expect(before.json()).toEqual({
        exists: true, id: expect.stringMatching(/^[0-9a-f-]{36}$/), enabled: true, path: `/api/webhook-triggers/${id}`,
        hasSecret: false, secretPrefix: null, deploymentId: first.deploymentId, lastTriggeredAt: null,
      });
      const second = await publish({ documentId: first.documentId, version: [1, 1] });
      const after = await view(first.documentId);
      expect(after.json()).toMatchObject({ exists: true, id, deploymentId: second.deploymentId });
      expect(await triggerRow(first.documentId)).toMatchObject({ id, team_id: teamId, deployment_id: second.deploymentId });
    });

    it('publishing through the editor API creates the trigger and re-points it on republish', async () => {
      const documentId = await draft();
      expect(await triggerRow(documentId)).toBeUndefined();
      const first = await call('POST', `/documents/${documentId}/publish`, ownerJwt, {});
      expect(first.statusCode, first.body).toBe(201);
      const row = await triggerRow(documentId);
      expect(row).toMatchObject({ project_id: projectId, team_id: teamId, deployment_id: first.json().deployment.id, enabled: true, secret_hash: null });
      const second = await call('POST', `/documents/${documentId}/publish`, ownKey, {});
      expect(second.statusCode, second.body).toBe(201);
      expect((await view(documentId)).json()).toMatchObject({ id: row!.id, deploymentId: second.json().deployment.id });
      const all = await stack.db.selectFrom('webhook_triggers').select('id').where('document_id', '=', documentId).execute();
      expect(all).toHaveLength(1);
    });

    it('a publish that fails (version taken) leaves the trigger where it was', async () => {
      const documentId = await draft();
      const first = await call('POST', `/documents/${documentId}/publish`, ownerJwt, { version: '1.0' });
      const refused = await call('POST', `/documents/${documentId}/publish`, ownerJwt, { version: '1.0' });
      expect([refused.statusCode, refused.json().error]).toEqual([409, 'version_exists']);
      expect((await triggerRow(documentId))?.deployment_id).toBe(first.json().deployment.id);
    });
  });

  describe('GET /api/webhook-triggers/by-document/:documentId', () => {
    it('a document never published: exists false, every other field empty', async () => {
      const documentId = await draft();
      const res = await view(documentId, memberJwt);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        exists: false, id: null, enabled: false, path: null, hasSecret: false, secretPrefix: null, deploymentId: null, lastTriggeredAt: null,
      });
    });

    it('project access is enough: a plain member and a team API key see it', async () => {
      const { documentId } = await publish();
      expect((await view(documentId, memberJwt)).json().exists).toBe(true);
      expect((await view(documentId, ownKey)).json().exists).toBe(true);
    });

    it('never shows the secret or its hash, only the 8-character prefix', async () => {
      const { documentId } = await publish();
      const { secret } = (await rotate(documentId)).json();
      const res = await view(documentId);
      expect(res.json()).toMatchObject({ hasSecret: true, secretPrefix: secret.slice(0, 8) });
      expect(res.json().secretPrefix).toMatch(/^wht_.{4}$/);
      expect(res.body).not.toContain(secret);
      expect(res.body).not.toContain(sha256(secret));
    });

    it("another team's document, an unknown one and a foreign API key all answer 404 Document not found", async () => {
      const { documentId } = await publish();
      for (const res of [await view(documentId, strangerJwt), await view(documentId, foreignKey), await view(randomUUID())]) {
        expect(res.statusCode).toBe(404);
        expect(res.json()).toEqual({ error: 'Document not found', message: 'Document not found' });
      }
    });

    it('a malformed document id is 400; no credential is 401', async () => {
      const bad = await view('not-a-uuid');
      expect([bad.statusCode, bad.json().error]).toEqual([400, 'invalid_request']);
      const anonymous = await stack.app.inject({ method: 'GET', url: `/api/webhook-triggers/by-document/${randomUUID()}` });
      expect([anonymous.statusCode, anonymous.json().error]).toEqual([401, 'Missing or invalid authorization header']);
    });
  });

  describe('POST /api/webhook-triggers/by-document/:documentId/rotate-secret', () => {
    it('returns { id, path, secret } once; stores only sha256 and the prefix', async () => {
      const { documentId } = await publish();
      const res = await rotate(documentId);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
      const body = res.json();
      const row = await triggerRow(documentId);
      expect(body).toEqual({ id: row!.id, path: `/api/webhook-triggers/${row!.id}`, secret: expect.stringMatching(/^wht_[A-Za-z0-9_-]{43}$/) });
      expect(row).toMatchObject({ secret_hash: sha256(body.secret), secret_prefix: body.secret.slice(0, 8), enabled: true });
      expect(JSON.stringify(row)).not.toContain(body.secret);
    });

    it('rotating again replaces the stored hash with the new secret', async () => {
      const { documentId } = await publish();
      const first = (await rotate(documentId)).json().secret as string;
      const second = (await rotate(documentId, ownKey)).json().secret as string;
      expect(second).not.toBe(first);
      expect((await triggerRow(documentId))?.secret_hash).toBe(sha256(second));
    });

    it('a document not published: 400 webhook_trigger_missing, nothing created', async () => {
      const documentId = await draft();
      const res = await rotate(documentId);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'webhook_trigger_missing', message: 'This document has no webhook trigger: publish it first' });
      expect(await triggerRow(documentId)).toBeUndefined();
    });

    it('a plain member who does not own the document: 403, secret unchanged', async () => {
      const { documentId } = await publish();
      const res = await rotate(documentId, memberJwt);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({
        error: 'project administrator required',
        message: 'Rotating the webhook secret needs a project administrator (team owner or admin) or the document owner',
      });
      expect(await triggerRow(documentId)).toMatchObject({ secret_hash: null, secret_prefix: null });
    });

    it('the document owner may rotate even as a plain member', async () => {
      const documentId = await draft(memberJwt);
      expect((await stack.db.selectFrom('documents').select('created_by').where('id', '=', documentId).executeTakeFirstOrThrow()).created_by).toBe(memberId);
      expect((await call('POST', `/documents/${documentId}/publish`, ownerJwt, {})).statusCode).toBe(201);
      const res = await rotate(documentId, memberJwt);
      expect(res.statusCode, res.body).toBe(200);
      expect((await triggerRow(documentId))?.secret_hash).toBe(sha256(res.json().secret));
    });

    it("another team's document is 404 like a missing one, and nothing changes", async () => {
      const { documentId } = await publish();
      for (const token of [strangerJwt, foreignKey]) {
        const res = await rotate(documentId, token);
        expect([res.statusCode, res.json().error]).toEqual([404, 'Document not found']);
      }
      expect((await triggerRow(documentId))?.secret_hash).toBeNull();
    });

    it('accepts Content-Type: application/json with an empty body', async () => {
      const { documentId } = await publish();
      const res = await stack.app.inject({
        method: 'POST', url: `/api/webhook-triggers/by-document/${documentId}/rotate-secret`,
        headers: { authorization: `Bearer ${ownerJwt}`, 'content-type': 'application/json' },
      });
      expect(res.statusCode, res.body).toBe(200);
    });
  });

  it('documents every route under the webhook-triggers tag in OpenAPI', async () => {
    const spec = (await stack.app.inject({ method: 'GET', url: '/docs/json' })).json();
    const tagged = Object.entries(spec.paths as Record<string, Record<string, { tags?: string[] }>>)
      .flatMap(([path, methods]) => Object.values(methods).filter((op) => op.tags?.includes('webhook-triggers')).map(() => path));
    expect(tagged.sort()).toEqual([
      '/api/webhook-triggers/by-document/{documentId}', '/api/webhook-triggers/by-document/{documentId}/rotate-secret', '/api/webhook-triggers/{webhookId}',
    ]);
  });
});
