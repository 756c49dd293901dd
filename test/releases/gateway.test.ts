import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateDocument } from '../../shared/documents/service.js';
import { publishDocument } from '../../shared/publishing/service.js';
import { exampleGraph } from '../../shared/documents/example-graph.js';
import { publishReleaseVersion } from '../../shared/releases/service.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { outputOf, releaseTenant, releaseWith, runCount } from './fixture.js';

// Spec §4.1 "Matching", §7.2 release errors, §8.1 limits on the gateway, §9 version resolution.
describe('release gateway: matching, inputs and results', () => {
  let stack: TestStack;
  let tenant: Awaited<ReturnType<typeof releaseTenant>>;
  let release: Awaited<ReturnType<typeof releaseWith>>;
  let auth: Record<string, string>;

  const post = (url: string, body?: unknown, headers: Record<string, string> = {}) => stack.app.inject({
    method: 'POST', url, headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  const refused = async (request: () => Promise<{ statusCode: number; json(): unknown; body: string }>, status: number, error: string) => {
    const before = await runCount(stack);
    const res = await request();
    expect(res.statusCode, res.body).toBe(status);
    expect(res.json()).toMatchObject({ error });
    expect(await runCount(stack)).toBe(before);
    return res;
  };

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
    tenant = await releaseTenant(stack);
    auth = { authorization: `Bearer ${tenant.apiKey}` };
    const app = tenant.publicApp.deploymentId;
    release = await releaseWith(stack, {
      projectId: tenant.projectId, version: '1.0',
      endpoints: [{ method: 'POST', path: '/v10', deploymentId: app }],
    });
    await publishReleaseVersion(stack.db, { kind: 'operator' }, release.id, { endpoints: [
      { method: 'POST', path: '/greet/:who', deploymentId: app, fieldMapping: { who: 'name', times: 'n' } },
      { method: 'GET', path: '/greet', deploymentId: app },
      { method: 'POST', path: '/users/:id/items/:item', deploymentId: app },
      { method: 'POST', path: '/todo' },
      { method: 'POST', path: '/latest-of-document', documentId: tenant.privateApp.documentId },
      { method: 'POST', path: '/run', deploymentId: app },
    ] }); // 1.1
    await publishReleaseVersion(stack.db, { kind: 'operator' }, release.id, { version: '2.0', endpoints: [{ method: 'POST', path: '/v20', deploymentId: app }] });
  });
  afterAll(() => stack?.close());

  describe('not found', () => {
    it('an unknown alias', async () => {
      await refused(() => post('/api/released-app/r/no-such-alias/1.0/run', { name: 'A' }), 404, "Release alias 'no-such-alias' not found");
    });

    it.each(['9.9', '^3.0', '^1.2', 'abc', '1'])('an unknown or malformed version %s', async (version) => {
      await refused(() => post(release.url(version, '/run'), { name: 'A' }), 404, `No published version matching '${version}' found`);
    });

    it.each([
      ['a trailing segment', '/greet/ada/extra'],
      ['a missing parameter', '/greet'],
      ['a different parameter count', '/users/1/items'],
      ['one segment more', '/users/1/items/2/3'],
      ['a trailing slash', '/run/'],
    ])('a path that almost matches: %s', async (_label, path) => {
      await refused(() => post(release.url('1.1', path), { name: 'A' }), 404, `No endpoint matching POST ${path}`);
    });

    it('the wrong method', async () => {
      await refused(() => stack.app.inject({ method: 'PUT', url: release.url('1.1', '/run'), headers: auth }), 404, 'No endpoint matching PUT /run');
      await refused(() => stack.app.inject({ method: 'GET', url: release.url('1.1', '/run'), headers: auth }), 404, 'No endpoint matching GET /run');
    });

    it('an endpoint of another version', async () => {
      await refused(() => post(release.url('1.0', '/run'), { name: 'A' }), 404, 'No endpoint matching POST /run');
    });
  });

  it('an endpoint without a deployment is 400', async () => {
    await refused(() => post(release.url('1.1', '/todo'), { name: 'A' }), 400, "Endpoint 'POST /todo' has no deployment configured");
  });

  it('resolves 1.0 exactly, ^1.0 to the newest 1.x, latest to the newest', async () => {
    expect((await post(release.url('1.0', '/v10'), { name: 'A' })).statusCode).toBe(200);
    await refused(() => post(release.url('^1.0', '/v10'), { name: 'A' }), 404, 'No endpoint matching POST /v10');
    expect((await post(release.url('^1.0', '/run'), { name: 'A' })).statusCode).toBe(200);
    expect((await post(release.url('%5E1.0', '/run'), { name: 'A' })).statusCode).toBe(200);
    expect((await post(release.url('latest', '/v20'), { name: 'A' })).statusCode).toBe(200);
  });

  it('maps public fields, path parameters included, and drops unmapped ones', async () => {
    const res = await post(release.url('1.1', '/greet/Ada'), { times: 21, name: 'ignored: not a public field' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(outputOf(res.json())).toEqual({ greeting: 'hello Ada', n: 42 });
  });

  it('GET takes its inputs from the query, numbers from their text', async () => {
    const res = await stack.app.inject({ method: 'GET', url: `${release.url('1.1', '/greet')}?name=Bo&n=4`, headers: auth });
    expect(res.statusCode, res.body).toBe(200);
    expect(outputOf(res.json())).toEqual({ greeting: 'hello Bo', n: 8 });
  });

  it('answers one JSON run result without globalCtx, even when asked for a trace', async () => {
    const res = await post(`${release.url('1.1', '/run')}?trace=full`, { name: 'A', trace: 'full' });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ runId: expect.any(String), status: 'completed', timedOut: false });
    expect(body).not.toHaveProperty('globalCtx');
    const run = await stack.db.selectFrom('runs').select(['inputs', 'team_id']).where('id', '=', body.runId).executeTakeFirstOrThrow();
    expect((run.inputs as { _trigger: { source: string } })._trigger.source).toBe('api');
  });

  it('a document endpoint runs the newest deployment of the document', async () => {
    const operator = { kind: 'operator' } as const;
    const changed = { ...exampleGraph, blocks: exampleGraph.blocks.map((b) => (b.id === 'x' ? { ...b, config: { expression: "{ 'greeting': 'hi ' & $q }" } } : b)) };
    await updateDocument(stack.db, operator, tenant.privateApp.documentId, { graph: changed });
    await publishDocument(stack.db, operator, tenant.privateApp.documentId, { visibility: 'private' });
    const res = await post(release.url('1.1', '/latest-of-document'), { name: 'Cy' });
    expect(res.statusCode, res.body).toBe(200);
    expect(outputOf(res.json())).toEqual({ greeting: 'hi Cy' });
  });

  it('validates the mapped inputs like any run: a missing required field is 400 and no run', async () => {
    const res = await refused(() => post(release.url('1.1', '/run'), { n: 2 }), 400, 'Input validation failed');
    expect(res.json()).toMatchObject({ details: [{ field: 'inputs.name', message: 'is required' }] });
  });

  it('applies the §8.1 input limits', async () => {
    await refused(() => post(release.url('1.1', '/run'), { name: 'x'.repeat(1024 * 1024 + 1) }), 400, 'input_field_too_large');
  });

  it('applies the body cap of run.input_limit', async () => {
    await upsertSiteSetting(stack.db, 'run.input_limit', { maxBodyBytes: 100 });
    stack.deps.settings.invalidate();
    try {
      await refused(() => post(release.url('1.1', '/run'), { name: 'y'.repeat(200) }), 413, 'request_body_too_large');
    } finally {
      await stack.db.deleteFrom('site_settings').where('key', '=', 'run.input_limit').execute();
      stack.deps.settings.invalidate();
    }
  });

  it('a deployment deleted after publishing answers 404 Deployment not found', async () => {
    const extra = await tenant.publish('public');
    const gone = await releaseWith(stack, { projectId: tenant.projectId, endpoints: [{ method: 'POST', path: '/run', deploymentId: extra.deploymentId }] });
    await stack.db.updateTable('deployments').set({ deleted_at: new Date() }).where('id', '=', extra.deploymentId).execute();
    await refused(() => post(gone.url('1.0', '/run'), { name: 'A' }), 404, 'Deployment not found');
  });
});
