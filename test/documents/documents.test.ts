import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addTeamMember, createProject } from '../../shared/identity/service.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// The contract's example graph plus an input nobody reads (it must stay out of the API schema).
const greetingGraph = {
  blocks: [
    { id: 'q', type: 'input', name: 'name', config: { valueType: 'string', required: true } },
    { id: 'n', type: 'input', name: 'n', config: { valueType: 'number', required: false, default: 1 } },
    { id: 'unused', type: 'input', name: 'unused', config: { valueType: 'string', required: true } },
    { id: 'x', type: 'transform', name: 'shape', config: { expression: "{ 'greeting': 'hello ' & $q, 'n': $n * 2 }" } },
    { id: 'o', type: 'output', name: 'result', config: { value: '{{x}}' } },
  ],
  edges: [{ from: 'q', to: 'x' }, { from: 'n', to: 'x' }, { from: 'x', to: 'o' }],
};

// The next draft: `n` is no longer read, a new required input `lang` is.
const greetingGraphV2 = {
  blocks: [
    { id: 'q', type: 'input', name: 'name', config: { valueType: 'string', required: true } },
    { id: 'n', type: 'input', name: 'n', config: { valueType: 'number', required: false, default: 1 } },
    { id: 'lang', type: 'input', name: 'lang', config: { valueType: 'string', required: true } },
    { id: 't', type: 'template', name: 'greeting', config: { template: '{{lang}}: hello {{q}}' } },
    { id: 'o', type: 'output', name: 'result', config: { value: '{{t}}' } },
  ],
  edges: [{ from: 'q', to: 't' }, { from: 'lang', to: 't' }, { from: 't', to: 'o' }],
};

const withBlocks = (blocks: object[], edges: object[] = []) => ({ blocks, edges });
const transform = (id: string, expression = '1') => ({ id, type: 'transform', name: id, config: { expression } });

describe('editor API: documents and publishing', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let ownerId: string;
  let teamId: string;
  let projectId: string;
  let ownerJwt: string;
  let memberJwt: string;
  let strangerJwt: string;
  let ownKey: string;
  let foreignKey: string;

  const call = (method: 'GET' | 'POST' | 'PUT', url: string, token: string, payload?: object) =>
    stack.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });
  const counts = async () => ({
    documents: (await stack.db.selectFrom('documents').select('id').execute()).length,
    deployments: (await stack.db.selectFrom('deployments').select('id').execute()).length,
  });
  const documentRow = (id: string) => stack.db.selectFrom('documents').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const newDocument = async (graph: object = greetingGraph, name = 'Greeter') => {
    const res = await call('POST', `/projects/${projectId}/documents`, ownerJwt, { name, graph });
    expect(res.statusCode).toBe(201);
    return res.json().document.id as string;
  };

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
    const owner = await make.user('owner');
    ownerId = owner.id;
    teamId = (await make.team(owner.id)).id;
    projectId = (await createProject(stack.db, { teamId, name: 'Apps' })).id;
    ownerJwt = await make.jwt(owner.id);
    const member = await make.user('member');
    await addTeamMember(stack.db, { teamId, userId: member.id, role: 'member' });
    memberJwt = await make.jwt(member.id);
    const stranger = await make.user('stranger');
    strangerJwt = await make.jwt(stranger.id);
    ownKey = (await make.apiKey(teamId, owner.id)).token;
    const otherTeam = await make.team(stranger.id, 'Other');
    foreignKey = (await make.apiKey(otherTeam.id, stranger.id)).token;
  });
  afterAll(() => stack?.close());

  describe('happy paths', () => {
    it('creates a document: 201, the stored graph, and the row', async () => {
      const res = await call('POST', `/projects/${projectId}/documents`, ownerJwt, { name: '  Greeter  ', graph: greetingGraph });
      expect(res.statusCode).toBe(201);
      const { document } = res.json();
      expect(document).toMatchObject({ projectId, name: 'Greeter', graph: greetingGraph });
      expect(Date.parse(document.createdAt)).not.toBeNaN();
      const row = await documentRow(document.id);
      expect(row).toMatchObject({ project_id: projectId, name: 'Greeter', created_by: ownerId, deleted_at: null });
      expect(row.graph).toEqual(greetingGraph);
    });

    it('fills the graph defaults (name, config, edges) when storing', async () => {
      const id = await newDocument({ blocks: [{ id: 'o', type: 'output', config: { value: 'hi' } }] });
      expect((await documentRow(id)).graph).toEqual({ blocks: [{ id: 'o', type: 'output', name: '', config: { value: 'hi' } }], edges: [] });
    });

    it('lists the project documents (newest first) and reads one, with a JWT or a key of the team', async () => {
      const first = await newDocument(greetingGraph, 'First');
      const second = await newDocument(greetingGraph, 'Second');
      const list = await call('GET', `/projects/${projectId}/documents`, memberJwt);
      expect(list.statusCode).toBe(200);
      const ids = list.json().documents.map((d: { id: string }) => d.id);
      expect(ids.indexOf(second)).toBeLessThan(ids.indexOf(first));
      expect(ids).toHaveLength((await counts()).documents);
      const byKey = await call('GET', `/documents/${first}`, ownKey);
      expect(byKey.statusCode).toBe(200);
      expect(byKey.json().document).toMatchObject({ id: first, projectId, name: 'First', graph: greetingGraph });
    });

    it('a member updates the name and the graph; a draft may hold block types not runnable yet', async () => {
      const id = await newDocument();
      const before = await documentRow(id);
      const draft = withBlocks([{ id: 'l', type: 'llm', name: 'ask', config: { model: 'm', prompt: 'hi' } }]);
      const res = await call('PUT', `/documents/${id}`, memberJwt, { name: 'Renamed', graph: draft });
      expect(res.statusCode).toBe(200);
      expect(res.json().document).toMatchObject({ id, name: 'Renamed', graph: draft });
      const after = await documentRow(id);
      expect(after).toMatchObject({ name: 'Renamed', graph: draft });
      expect(after.updated_at.getTime()).toBeGreaterThan(before.updated_at.getTime());
      const renameOnly = await call('PUT', `/documents/${id}`, ownKey, { name: 'Again' });
      expect(renameOnly.json().document).toMatchObject({ name: 'Again', graph: draft });
    });

    it('publishes 1.0 with the consumed inputs only; republish gives 1.1 with a refreshed schema while 1.0 keeps its own', async () => {
      const id = await newDocument();
      const first = await call('POST', `/documents/${id}/publish`, ownerJwt, {});
      expect(first.statusCode).toBe(201);
      const v1 = first.json().deployment;
      const v1Schema = {
        inputs: [
          { blockId: 'q', name: 'name', valueType: 'string', required: true },
          { blockId: 'n', name: 'n', valueType: 'number', required: false, default: 1 },
        ],
      };
      expect(v1).toMatchObject({ documentId: id, version: '1.0', visibility: 'private', apiSchema: v1Schema });

      expect((await call('PUT', `/documents/${id}`, ownerJwt, { graph: greetingGraphV2 })).statusCode).toBe(200);
      const second = await call('POST', `/documents/${id}/publish`, ownKey, { visibility: 'public' });
      expect(second.statusCode).toBe(201);
      const v2 = second.json().deployment;
      expect(v2).toMatchObject({
        documentId: id, version: '1.1', visibility: 'public',
        apiSchema: { inputs: [
          { blockId: 'q', name: 'name', valueType: 'string', required: true },
          { blockId: 'lang', name: 'lang', valueType: 'string', required: true },
        ] },
      });

      const rows = await stack.db.selectFrom('deployments').selectAll().where('document_id', '=', id).orderBy('version_minor').execute();
      expect(rows.map((r) => [r.version_major, r.version_minor, r.visibility])).toEqual([[1, 0, 'private'], [1, 1, 'public']]);
      expect(rows[0]).toMatchObject({ id: v1.id, snapshot: greetingGraph, api_schema: v1Schema, project_id: projectId, team_id: teamId, published_by: ownerId });
      expect(rows[1]).toMatchObject({ id: v2.id, snapshot: greetingGraphV2, api_schema: v2.apiSchema, published_by: ownerId });

      const list = await call('GET', `/documents/${id}/deployments`, memberJwt);
      expect(list.statusCode).toBe(200);
      expect(list.json().deployments).toEqual([v2, v1]);
    });

    it('an explicit version is used as given; the default then follows the highest version', async () => {
      const id = await newDocument();
      const explicit = await call('POST', `/documents/${id}/publish`, ownerJwt, { version: '2.5' });
      expect([explicit.statusCode, explicit.json().deployment.version]).toEqual([201, '2.5']);
      const older = await call('POST', `/documents/${id}/publish`, ownerJwt, { version: '1.3' });
      expect([older.statusCode, older.json().deployment.version]).toEqual([201, '1.3']);
      const next = await call('POST', `/documents/${id}/publish`, ownerJwt);
      expect([next.statusCode, next.json().deployment.version]).toEqual([201, '2.6']);
      const versions = (await call('GET', `/documents/${id}/deployments`, ownerJwt)).json().deployments.map((d: { version: string }) => d.version);
      expect(versions).toEqual(['2.6', '2.5', '1.3']);
    });

    it('concurrent publishes without a version each get their own next minor', async () => {
      const id = await newDocument();
      const results = await Promise.all(Array.from({ length: 5 }, () => call('POST', `/documents/${id}/publish`, ownerJwt, {})));
      expect(results.map((r) => r.statusCode)).toEqual([201, 201, 201, 201, 201]);
      expect(results.map((r) => r.json().deployment.version).sort()).toEqual(['1.0', '1.1', '1.2', '1.3', '1.4']);
    });

    it('a team admin publishes too', async () => {
      const admin = await make.user('admin');
      await addTeamMember(stack.db, { teamId, userId: admin.id, role: 'admin' });
      const id = await newDocument();
      const res = await call('POST', `/documents/${id}/publish`, await make.jwt(admin.id), {});
      expect([res.statusCode, res.json().deployment.version]).toEqual([201, '1.0']);
    });
  });

  it('the endpoints appear in the OpenAPI document', async () => {
    const res = await stack.app.inject({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    expect(Object.keys(res.json().paths)).toEqual(expect.arrayContaining([
      '/projects/{projectId}/documents', '/documents/{documentId}', '/documents/{documentId}/publish', '/documents/{documentId}/deployments',
    ]));
  });

  describe('bad graphs: 400 invalid_graph naming the blocks, nothing written', () => {
    it.each([
      ['a cycle', withBlocks([transform('a', '$b'), transform('b', '$a')], [{ from: 'a', to: 'b' }, { from: 'b', to: 'a' }]), ['a'], /cycle/],
      ['a dangling edge', withBlocks([transform('a')], [{ from: 'a', to: 'ghost' }]), ['ghost'], /does not exist/],
      ['a duplicate id', withBlocks([transform('a'), transform('a')]), ['a'], /duplicate block id/],
      ['a bad block config', withBlocks([{ id: 'in', type: 'input', name: 'in', config: { valueType: 'colour' } }]), ['in'], /config\.valueType/],
      ['an unknown reference', withBlocks([{ id: 't', type: 'template', name: 't', config: { template: 'hi {{nobody}}' } }]), ['t'], /reference 'nobody' names no block/],
      ['an unknown block type', withBlocks([transform('ok'), { id: 'weird', type: 'teleport', config: {} }]), ['weird'], /blocks\.1\.type/],
      ['when on a non-condition edge', withBlocks([transform('a'), transform('b')], [{ from: 'a', to: 'b', when: true }]), ['a'], /not a condition/],
    ])('on create: %s', async (_name, graph, blockIds, message) => {
      const before = await counts();
      const res = await call('POST', `/projects/${projectId}/documents`, ownerJwt, { name: 'Bad', graph });
      expect(res.statusCode).toBe(400);
      const body = res.json();
      expect(body.error).toBe('invalid_graph');
      expect(body.details.map((d: { blockId: string }) => d.blockId)).toEqual(blockIds);
      expect(body.details[0].message).toMatch(message);
      expect(body.message).toContain(blockIds[0]);
      expect(await counts()).toEqual(before);
    });

    it('on update: the stored graph stays as it was', async () => {
      const id = await newDocument();
      const before = await documentRow(id);
      const res = await call('PUT', `/documents/${id}`, ownerJwt, { name: 'Nope', graph: withBlocks([transform('a'), transform('a')]) });
      expect([res.statusCode, res.json().error]).toEqual([400, 'invalid_graph']);
      expect(await documentRow(id)).toEqual(before);
    });

    it('a graph that is not an object at all is a request error', async () => {
      const before = await counts();
      const res = await call('POST', `/projects/${projectId}/documents`, ownerJwt, { name: 'Bad', graph: [1, 2] });
      expect([res.statusCode, res.json().error]).toEqual([400, 'invalid_request']);
      expect(await counts()).toEqual(before);
    });
  });

  describe('bad publishes: a clear 4xx and no deployment', () => {
    it('llm and http blocks publish like any other (the engine runs every block type)', async () => {
      const graph = withBlocks([
        { id: 'l', type: 'llm', name: 'ask', config: { model: 'm', prompt: 'hi' } },
        { id: 'h', type: 'http', name: 'fetch', config: { method: 'GET', url: 'https://example.com' } },
        { id: 'o', type: 'output', name: 'out', config: { value: '{{l}}' } },
      ], [{ from: 'l', to: 'o' }]);
      const id = await newDocument(graph);
      const res = await call('POST', `/documents/${id}/publish`, ownerJwt, {});
      expect(res.statusCode).toBe(201);
    });

    it.each(['1', '1.0.0', 'v1.0', '01.0', 'latest', '^1.0', ''])('a malformed version %j is 400 invalid_version', async (version) => {
      const id = await newDocument();
      const before = await counts();
      const res = await call('POST', `/documents/${id}/publish`, ownerJwt, { version });
      expect([res.statusCode, res.json().error]).toEqual([400, 'invalid_version']);
      expect(await counts()).toEqual(before);
    });

    it('a bad visibility is 400 invalid_request', async () => {
      const id = await newDocument();
      const before = await counts();
      const res = await call('POST', `/documents/${id}/publish`, ownerJwt, { visibility: 'team' });
      expect([res.statusCode, res.json().error]).toEqual([400, 'invalid_request']);
      expect(await counts()).toEqual(before);
    });

    it('an existing version is 409 version_exists', async () => {
      const id = await newDocument();
      expect((await call('POST', `/documents/${id}/publish`, ownerJwt, { version: '1.0' })).statusCode).toBe(201);
      const before = await counts();
      const res = await call('POST', `/documents/${id}/publish`, ownerJwt, { version: '1.0' });
      expect([res.statusCode, res.json().error]).toEqual([409, 'version_exists']);
      expect(await counts()).toEqual(before);
    });

    it('a member without admin rights gets 403 project administrator required (JWT and their API key)', async () => {
      const id = await newDocument();
      const before = await counts();
      const res = await call('POST', `/documents/${id}/publish`, memberJwt, {});
      expect([res.statusCode, res.json().error]).toEqual([403, 'project administrator required']);
      const memberId = (await stack.db.selectFrom('team_members').select('user_id').where('team_id', '=', teamId).where('role', '=', 'member').executeTakeFirstOrThrow()).user_id;
      const memberKey = (await make.apiKey(teamId, memberId)).token;
      const byKey = await call('POST', `/documents/${id}/publish`, memberKey, {});
      expect([byKey.statusCode, byKey.json().error]).toEqual([403, 'project administrator required']);
      expect(await counts()).toEqual(before);
    });
  });

  describe('access: callers outside the project see 404, exactly like a missing row', () => {
    it('a non-member gets 404 on every endpoint, and nothing changes', async () => {
      const id = await newDocument();
      const before = await counts();
      const row = await documentRow(id);
      const responses = [
        await call('POST', `/projects/${projectId}/documents`, strangerJwt, { name: 'x', graph: greetingGraph }),
        await call('GET', `/projects/${projectId}/documents`, strangerJwt),
        await call('GET', `/documents/${id}`, strangerJwt),
        await call('PUT', `/documents/${id}`, strangerJwt, { name: 'stolen' }),
        await call('POST', `/documents/${id}/publish`, strangerJwt, {}),
        await call('GET', `/documents/${id}/deployments`, strangerJwt),
      ];
      expect(responses.map((r) => [r.statusCode, r.json().error])).toEqual([
        [404, 'Project not found'], [404, 'Project not found'],
        [404, 'Document not found'], [404, 'Document not found'], [404, 'Document not found'], [404, 'Document not found'],
      ]);
      expect(await counts()).toEqual(before);
      expect(await documentRow(id)).toEqual(row);
    });

    it('an API key of another team gets 404, and nothing changes', async () => {
      const id = await newDocument();
      const before = await counts();
      const responses = [
        await call('POST', `/projects/${projectId}/documents`, foreignKey, { name: 'x', graph: greetingGraph }),
        await call('GET', `/documents/${id}`, foreignKey),
        await call('POST', `/documents/${id}/publish`, foreignKey, {}),
      ];
      expect(responses.map((r) => [r.statusCode, r.json().error])).toEqual([[404, 'Project not found'], [404, 'Document not found'], [404, 'Document not found']]);
      expect(await counts()).toEqual(before);
    });

    it('a missing project or document answers the same 404', async () => {
      const missing = '00000000-0000-4000-8000-000000000000';
      const before = await counts();
      expect((await call('POST', `/projects/${missing}/documents`, ownerJwt, { name: 'x', graph: greetingGraph })).json().error).toBe('Project not found');
      expect((await call('GET', `/documents/${missing}`, ownerJwt)).json().error).toBe('Document not found');
      expect((await call('POST', `/documents/${missing}/publish`, ownerJwt, {})).statusCode).toBe(404);
      expect(await counts()).toEqual(before);
    });

    it('malformed project and document ids are 400 invalid_request', async () => {
      const before = await counts();
      const responses = [
        await call('POST', '/projects/not-a-uuid/documents', ownerJwt, { name: 'x', graph: greetingGraph }),
        await call('GET', '/projects/not-a-uuid/documents', ownerJwt),
        await call('GET', '/documents/123', ownerJwt),
        await call('PUT', '/documents/123', ownerJwt, { name: 'x' }),
        await call('POST', '/documents/123/publish', ownerJwt, {}),
        await call('GET', '/documents/123/deployments', ownerJwt),
      ];
      for (const res of responses) {
        expect(res.statusCode).toBe(400);
        expect(res.json()).toMatchObject({ error: 'invalid_request', details: [{ field: expect.stringMatching(/^params\.(projectId|documentId)$/) }] });
      }
      expect(await counts()).toEqual(before);
    });

    it('no credential is 401; other bodies are request errors', async () => {
      const before = await counts();
      const anonymous = await stack.app.inject({ method: 'POST', url: `/projects/${projectId}/documents`, payload: { name: 'x', graph: greetingGraph } });
      expect(anonymous.statusCode).toBe(401);
      expect((await call('POST', `/projects/${projectId}/documents`, ownerJwt, { graph: greetingGraph })).json().error).toBe('invalid_request');
      const id = await newDocument();
      const emptyPut = await call('PUT', `/documents/${id}`, ownerJwt, {});
      expect([emptyPut.statusCode, emptyPut.json().error]).toEqual([400, 'invalid_request']);
      expect(await counts()).toEqual({ ...before, documents: before.documents + 1 });
    });
  });
});
