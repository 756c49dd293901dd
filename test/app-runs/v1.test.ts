import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { grantCredits } from '../../shared/billing/service.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

const echoGraph: Graph = {
  blocks: [
    { id: 'q', type: 'input', name: 'question', config: { valueType: 'string', required: true } },
    { id: 'o', type: 'output', name: 'answer', config: { value: '=$uppercase($q)' } },
  ],
  edges: [{ from: 'q', to: 'o' }],
};

describe('/v1 workflow API', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let apiKey: string;
  let documentId: string;
  const call = (method: 'GET' | 'POST', url: string, token: string, payload?: object) =>
    stack.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
    make = credentialFactory(stack);
    const tenant = await make.fundedTenant();
    apiKey = tenant.apiKey;
    const team = tenant.team;
    ({ documentId } = await publishDirect(stack.db, echoGraph, { teamId: team.id }));
  });
  afterAll(() => stack?.close());

  it('lists workflows, runs one with a text input, and reads the run back', async () => {
    const list = (await call('GET', '/v1/workflows', apiKey)).json();
    expect(list.workflows).toEqual([expect.objectContaining({ id: documentId, name: 'App' })]);
    const run = await call('POST', `/v1/workflows/${documentId}/run`, apiKey, { input: 'hello' });
    expect(run.statusCode).toBe(200);
    expect(run.json()).toMatchObject({ id: expect.any(String), status: 'completed', output: 'HELLO' });
    const again = (await call('GET', `/v1/runs/${run.json().id}`, apiKey)).json();
    expect(again).toMatchObject({ id: run.json().id, status: 'completed', output: 'HELLO' });
    const runs = (await call('GET', `/v1/workflows/${documentId}/runs`, apiKey)).json();
    expect(runs.runs[0]).toMatchObject({ id: run.json().id, status: 'completed' });
  });

  it('another team sees nothing: empty list, 404 run, 403 private workflow; a JWT is refused', async () => {
    const stranger = await make.user('stranger');
    const team = await make.team(stranger.id);
    await grantCredits(stack.db, { teamId: team.id, amountMilli: 1000 });
    const otherKey = (await make.apiKey(team.id, stranger.id)).token;
    expect((await call('GET', '/v1/workflows', otherKey)).json().workflows).toEqual([]);
    const mine = (await call('POST', `/v1/workflows/${documentId}/run`, apiKey, { input: 'x' })).json();
    const peek = await call('GET', `/v1/runs/${mine.id}`, otherKey);
    expect([peek.statusCode, peek.json().error]).toEqual([404, 'Run not found']);
    const before = (await stack.db.selectFrom('runs').select('id').execute()).length;
    const steal = await call('POST', `/v1/workflows/${documentId}/run`, otherKey, { input: 'x' });
    expect(steal.statusCode).toBe(403);
    expect((await stack.db.selectFrom('runs').select('id').execute()).length).toBe(before);
    // Another team's workflow id answers exactly what a random id gets.
    const foreignRuns = await call('GET', `/v1/workflows/${documentId}/runs`, otherKey);
    const randomRuns = await call('GET', `/v1/workflows/${randomUUID()}/runs`, otherKey);
    expect([foreignRuns.statusCode, foreignRuns.json()]).toEqual([404, { error: 'Deployment not found', message: 'Deployment not found' }]);
    expect([randomRuns.statusCode, randomRuns.json()]).toEqual([foreignRuns.statusCode, foreignRuns.json()]);
    const jwt = await call('GET', '/v1/workflows', await make.jwt(stranger.id));
    // A valid credential of another kind: 403 (spec §5.4), not 401.
    expect([jwt.statusCode, jwt.json().error]).toEqual([403, 'This endpoint only accepts API key authentication']);
  });

  it('bad input: a non-string input is 400 and an unknown workflow 404, with no run', async () => {
    const before = (await stack.db.selectFrom('runs').select('id').execute()).length;
    expect((await call('POST', `/v1/workflows/${documentId}/run`, apiKey, { input: 42 })).statusCode).toBe(400);
    const unknown = await call('POST', `/v1/workflows/${randomUUID()}/run`, apiKey, { input: 'x' });
    expect([unknown.statusCode, unknown.json().error]).toEqual([404, 'Deployment not found']);
    expect((await stack.db.selectFrom('runs').select('id').execute()).length).toBe(before);
  });
});
