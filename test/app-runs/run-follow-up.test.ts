import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

const graph: Graph = {
  blocks: [
    { id: 'a', type: 'transform', name: 'a', config: { expression: '1 + 1' } },
    { id: 'o', type: 'output', name: 'o', config: { value: '{{a}}' } },
  ],
  edges: [{ from: 'a', to: 'o' }],
};

describe('resuming a run stream and cancelling a run', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let apiKey: string;
  let deploymentId: string;

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
    make = credentialFactory(stack);
    const tenant = await make.fundedTenant();
    apiKey = tenant.apiKey;
    const team = tenant.team;
    ({ deploymentId } = await publishDirect(stack.db, graph, { teamId: team.id }));
  });
  afterAll(() => stack?.close());

  const finishedRun = async () => {
    const res = await stack.app.inject({ method: 'POST', url: `/api/released-app/${deploymentId}/run`, headers: { authorization: `Bearer ${apiKey}` }, payload: { stream: false } });
    expect(res.json().status).toBe('completed');
    return res.json().runId as string;
  };
  const allEvents = (runId: string) => stack.db.selectFrom('run_events').select(['id', 'type']).where('run_id', '=', runId).orderBy('id').execute();

  it('?after= resumes an NDJSON stream with exactly the events after that id', async () => {
    const runId = await finishedRun();
    const stored = await allEvents(runId);
    const res = await stack.app.inject({ method: 'GET', url: `/api/runs/${runId}/events?after=${stored[1]!.id}`, headers: { authorization: `Bearer ${apiKey}` } });
    expect(res.statusCode).toBe(200);
    const types = res.body.trim().split('\n').map((l) => JSON.parse(l).type);
    expect(types).toEqual(stored.slice(2).map((e) => e.type));
    expect(types.at(-1)).toBe('run_complete');
  });

  it('Last-Event-ID resumes an SSE stream, and every event arrives exactly once', async () => {
    const runId = await finishedRun();
    const stored = await allEvents(runId);
    const res = await stack.app.inject({
      method: 'GET', url: `/api/runs/${runId}/events?format=sse`, headers: { authorization: `Bearer ${apiKey}`, 'last-event-id': String(stored[0]!.id) },
    });
    const ids = [...res.body.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids).toEqual(stored.slice(1).map((e) => e.id));
  });

  it("another team's credential sees 404 Run not found", async () => {
    const runId = await finishedRun();
    const stranger = await make.user('stranger');
    const otherTeam = await make.team(stranger.id);
    const otherKey = (await make.apiKey(otherTeam.id, stranger.id)).token;
    for (const [method, url] of [['GET', `/api/runs/${runId}/events`], ['POST', `/api/runs/${runId}/cancel`]] as const) {
      const res = await stack.app.inject({ method, url, headers: { authorization: `Bearer ${otherKey}` } });
      expect([res.statusCode, res.json().error]).toEqual([404, 'Run not found']);
    }
    const unknown = await stack.app.inject({ method: 'GET', url: `/api/runs/${randomUUID()}/events`, headers: { authorization: `Bearer ${apiKey}` } });
    expect(unknown.statusCode).toBe(404);
  });

  it('a member of a team that has since been deleted sees 404 Run not found, like a stranger', async () => {
    const tenant = await make.fundedTenant();
    const { deploymentId: ownDeployment } = await publishDirect(stack.db, graph, { teamId: tenant.team.id });
    const started = await stack.app.inject({ method: 'POST', url: `/api/released-app/${ownDeployment}/run`, headers: { authorization: `Bearer ${tenant.apiKey}` }, payload: { stream: false } });
    const runId = started.json().runId as string;
    const jwt = await make.jwt(tenant.owner.id);
    const before = await stack.app.inject({ method: 'GET', url: `/api/runs/${runId}/events`, headers: { authorization: `Bearer ${jwt}` } });
    expect(before.statusCode).toBe(200);
    await stack.db.updateTable('teams').set({ deleted_at: new Date() }).where('id', '=', tenant.team.id).execute();
    for (const [method, url] of [['GET', `/api/runs/${runId}/events`], ['POST', `/api/runs/${runId}/cancel`]] as const) {
      const res = await stack.app.inject({ method, url, headers: { authorization: `Bearer ${jwt}` } });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.json().error).toBe('Run not found');
    }
  });

  it('cancelling a run that has ended is 409 run_finished and changes nothing', async () => {
    const runId = await finishedRun();
    const before = await allEvents(runId);
    const res = await stack.app.inject({ method: 'POST', url: `/api/runs/${runId}/cancel`, headers: { authorization: `Bearer ${apiKey}` } });
    expect([res.statusCode, res.json().error]).toEqual([409, 'run_finished']);
    expect(await allEvents(runId)).toEqual(before);
  });
});
