import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { addTeamMember, createProject } from '../../shared/identity/service.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { waitingSearchAttribute } from '../../temporal/search-attributes.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';

// Runs that wait (CONTRACTS.md "Long runs"): `wait` and `approval` blocks on the real Temporal dev
// server and PostgreSQL — the durable timer, the signal, runs.status, the JSON mode's 202, the
// stream that stays open, WfWaiting, refusals at save and publish, and deciding approvals.

const waitGraph = (wait: Record<string, unknown>): Graph => ({
  blocks: [
    { id: 'q', type: 'input', name: 'q', config: { valueType: 'string', required: true } },
    { id: 'pause', type: 'wait', name: 'pause', config: wait },
    { id: 'o', type: 'output', name: 'o', config: { value: 'done {{q}}' } },
  ],
  edges: [{ from: 'q', to: 'pause' }, { from: 'pause', to: 'o' }],
});

const approvalGraph = (config: Record<string, unknown>): Graph => ({
  blocks: [
    { id: 'q', type: 'input', name: 'q', config: { valueType: 'string', required: true } },
    { id: 'ok', type: 'approval', name: 'ok', config },
    { id: 'yes', type: 'condition', name: 'yes', config: { expression: '$ok.approved' } },
    { id: 'sent', type: 'output', name: 'sent', config: { value: 'sent {{q}}' } },
    { id: 'held', type: 'output', name: 'held', config: { value: 'held {{q}}' } },
  ],
  edges: [
    { from: 'q', to: 'ok' }, { from: 'ok', to: 'yes' },
    { from: 'yes', to: 'sent', when: true }, { from: 'yes', to: 'held', when: false },
  ],
});

type Json = Record<string, unknown>;

describe('runs that wait: wait and approval blocks', () => {
  let stack: TestStack;
  let teamId: string;
  let apiKey: string;
  let ownerJwt: string;
  let foreignKey: string;
  let strangerJwt: string;
  let projectId: string;

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
    const make = credentialFactory(stack);
    const tenant = await make.fundedTenant(1_000_000);
    teamId = tenant.team.id;
    apiKey = tenant.apiKey;
    ownerJwt = await make.jwt(tenant.owner.id);
    projectId = (await createProject(stack.db, { teamId, name: 'Waits' })).id;
    const stranger = await make.user('stranger');
    strangerJwt = await make.jwt(stranger.id);
    const other = await make.fundedTenant();
    foreignKey = other.apiKey;
    const member = await make.user('member');
    await addTeamMember(stack.db, { teamId, userId: member.id, role: 'member' });
  });
  afterAll(() => stack?.close());

  const publish = async (graph: Graph) => (await publishDirect(stack.db, graph, { teamId })).deploymentId;
  const run = (deploymentId: string, payload: Json, key = apiKey) =>
    stack.app.inject({ method: 'POST', url: `/api/released-app/${deploymentId}/run`, headers: { authorization: `Bearer ${key}` }, payload });
  const runRow = (runId: string) => stack.db.selectFrom('runs').select(['status', 'error']).where('id', '=', runId).executeTakeFirstOrThrow();
  const approvalRow = (runId: string) => stack.db.selectFrom('run_approvals').selectAll().where('run_id', '=', runId).executeTakeFirstOrThrow();
  const events = async (runId: string) => (await stack.db.selectFrom('run_events').select(['type', 'payload']).where('run_id', '=', runId).orderBy('id').execute())
    .map((e): Json & { type: string } => ({ type: e.type, ...(e.payload as Json) }));
  const ended = (runId: string) => until(async () => {
    const row = await runRow(runId);
    return row.status !== 'running' && row.status !== 'waiting' ? row : null;
  }, 20_000, `run ${runId} to end`);
  const waitingAttribute = async (runId: string) => {
    const description = await stack.deps.temporal.client.workflow.getHandle(workflowIds.appRun(runId)).describe();
    return description.typedSearchAttributes.get(waitingSearchAttribute);
  };
  const decide = (runId: string, blockId: string, payload: Json, key = apiKey) =>
    stack.app.inject({ method: 'POST', url: `/api/runs/${runId}/approvals/${blockId}`, headers: { authorization: `Bearer ${key}` }, payload });
  /** Starts an approval run in JSON mode; it answers 202 once the run waits. */
  const startApproval = async (config: Json = { prompt: 'Send the reply to {{q}}?' }) => {
    const res = await run(await publish(approvalGraph(config)), { inputs: { q: 'Ada' }, stream: false });
    expect(res.statusCode).toBe(202);
    return res.json() as { runId: string; status: string; waiting: Json; statusUrl: string; eventsUrl: string };
  };

  describe('refused at save and publish with the block id (400), nothing written', () => {
    const save = (graph: Graph) => stack.app.inject({
      method: 'POST', url: `/projects/${projectId}/documents`, headers: { authorization: `Bearer ${ownerJwt}` }, payload: { name: 'Waits', graph },
    });
    const documentCount = async () => (await stack.db.selectFrom('documents').select('id').where('project_id', '=', projectId).execute()).length;

    it.each([
      ['a wait over the cap', waitGraph({ seconds: 2_592_001 }), 'pause', /over the cap of 2592000/],
      ['an until in the past', waitGraph({ until: '2020-01-01T00:00:00Z' }), 'pause', /in the past/],
      ['an unparsable until', waitGraph({ until: 'next tuesday' }), 'pause', /not an ISO 8601 time/],
      ['an until without a zone', waitGraph({ until: '2099-01-01T09:00:00' }), 'pause', /not an ISO 8601 time/],
      ['an approval without a prompt', approvalGraph({}), 'ok', /prompt/],
      ['an approval with an empty prompt', approvalGraph({ prompt: '   ' }), 'ok', /prompt/],
      ['an approval timeout over the cap', approvalGraph({ prompt: 'ok?', timeoutSeconds: 2_592_001 }), 'ok', /over the cap/],
      ['approval fields that are not a JSON Schema', approvalGraph({ prompt: 'ok?', fields: { type: 'object', properties: { n: { type: 'nonsense' } } } }), 'ok', /fields/],
    ])('%s', async (_name, graph, blockId, message) => {
      const before = await documentCount();
      const res = await save(graph);
      expect(res.statusCode).toBe(400);
      const body = res.json();
      expect(body.error).toBe('invalid_graph');
      expect(body.details.map((d: { blockId: string }) => d.blockId)).toEqual([blockId]);
      expect(body.details[0].message).toMatch(message);
      expect(await documentCount()).toBe(before);
    });

    it('an until that has passed between save and publish is refused at publish; no deployment', async () => {
      const soon = new Date(Date.now() + 1_500).toISOString();
      const saved = await save(waitGraph({ until: soon }));
      expect(saved.statusCode).toBe(201);
      const documentId = saved.json().document.id as string;
      await new Promise((r) => setTimeout(r, 2_000));
      const res = await stack.app.inject({ method: 'POST', url: `/documents/${documentId}/publish`, headers: { authorization: `Bearer ${ownerJwt}` }, payload: {} });
      expect(res.statusCode).toBe(400);
      expect(res.json().details).toEqual([expect.objectContaining({ blockId: 'pause', message: expect.stringMatching(/in the past/) })]);
      expect(await stack.db.selectFrom('deployments').select('id').where('document_id', '=', documentId).execute()).toEqual([]);
    });

    it('templated waits and prompts are accepted at save (checked once rendered)', async () => {
      expect((await save(waitGraph({ seconds: '{{q}}' }))).statusCode).toBe(201);
      expect((await save(approvalGraph({ prompt: 'Send to {{q}}?', timeoutSeconds: 60, fields: { type: 'object', properties: { note: { type: 'string' } } } }))).statusCode).toBe(201);
    });
  });

  describe('wait blocks', () => {
    it('JSON mode answers 202 while the run waits; the run reads waiting, carries WfWaiting, and completes when the timer fires', async () => {
      const res = await run(await publish(waitGraph({ seconds: 2 })), { inputs: { q: 'x' }, stream: false });
      expect(res.statusCode).toBe(202);
      const body = res.json();
      expect(body).toEqual({
        runId: expect.any(String), status: 'waiting', waiting: { blockId: 'pause', blockType: 'wait', until: expect.any(String) },
        statusUrl: `/runs/${body.runId}`, eventsUrl: `/api/runs/${body.runId}/events`,
      });
      expect(Date.parse(body.waiting.until)).toBeGreaterThan(Date.now());
      expect((await runRow(body.runId)).status).toBe('waiting');
      await until(async () => (await waitingAttribute(body.runId)) === 'wait', 5_000, 'WfWaiting=wait');
      const view = await stack.app.inject({ method: 'GET', url: `/runs/${body.runId}`, headers: { authorization: `Bearer ${ownerJwt}` } });
      expect(view.json().run.status).toBe('waiting');

      expect((await ended(body.runId)).status).toBe('completed');
      const log = await events(body.runId);
      expect(log.map((e) => `${e.type}:${e.blockId ?? ''}`)).toEqual([
        'run_start:', 'block_start:pause', 'block_waiting:pause', 'block_complete:pause', 'block_end:pause',
        'block_start:o', 'block_complete:o', 'block_end:o', 'run_complete:',
      ]);
      expect(log.find((e) => e.type === 'block_complete' && e.blockId === 'pause')!.output).toEqual({ waitedSeconds: 2 });
      expect(await waitingAttribute(body.runId)).toBeUndefined();
    });

    it('a stream stays open through the wait and ends with run_complete', async () => {
      const started = Date.now();
      const res = await run(await publish(waitGraph({ seconds: '{{q}}' })), { inputs: { q: '1' } });
      expect(res.statusCode).toBe(200);
      const lines = res.body.split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line) as Json);
      expect(lines.map((e) => e.type)).toEqual(['run_start', 'block_start', 'block_waiting', 'block_complete', 'block_end', 'block_start', 'block_complete', 'block_end', 'run_complete']);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    });

    it('the time a run waits does not count against its timeout', async () => {
      const res = await run(await publish(waitGraph({ seconds: 3 })), { inputs: { q: 'x' }, stream: false, timeout: 2 });
      expect(res.statusCode).toBe(202);
      expect((await ended(res.json().runId)).status).toBe('completed');
    });

    it('/v1 answers a run that begins to wait with the same 202', async () => {
      const { documentId } = await publishDirect(stack.db, waitGraph({ seconds: 1 }), { teamId });
      const res = await stack.app.inject({ method: 'POST', url: `/v1/workflows/${documentId}/run`, headers: { authorization: `Bearer ${apiKey}` }, payload: { input: 'x' } });
      expect(res.statusCode).toBe(202);
      expect(res.json()).toMatchObject({ status: 'waiting', waiting: { blockId: 'pause', blockType: 'wait' }, eventsUrl: `/api/runs/${res.json().runId}/events` });
      expect((await ended(res.json().runId)).status).toBe('completed');
    });

    it('a templated wait that renders nonsense fails its block at run time', async () => {
      const res = await run(await publish(waitGraph({ until: '{{q}}' })), { inputs: { q: 'soon' }, stream: false });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ status: 'failed', error: expect.stringMatching(/Block 'pause' failed: until 'soon' is not an ISO 8601 time/) });
    });
  });

  describe('approval blocks', () => {
    it('waits for a decision by an API key; the decision flows into a condition and the run completes', async () => {
      const started = await startApproval({ prompt: 'Send the reply to {{q}}?', fields: { type: 'object', properties: { note: { type: 'string' } }, required: ['note'] } });
      expect(started.waiting).toEqual({ blockId: 'ok', blockType: 'approval', expiresAt: expect.any(String) });
      // Set by the workflow task after the one that wrote block_waiting; visibility follows shortly.
      await until(async () => (await waitingAttribute(started.runId)) === 'approval', 5_000, 'WfWaiting=approval');
      const waiting = (await events(started.runId)).find((e) => e.type === 'block_waiting')!;
      expect(waiting).toMatchObject({ blockType: 'approval', prompt: 'Send the reply to Ada?', approvalUrl: expect.stringMatching(/\/approve\/wfa-[A-Za-z0-9_-]{43}$/) });
      const row = await approvalRow(started.runId);
      expect(row).toMatchObject({ status: 'pending', team_id: teamId, block_id: 'ok', prompt: 'Send the reply to Ada?' });
      // Only the token's hash is stored.
      expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(row.token_hash).not.toContain(String(waiting.approvalUrl).split('/').at(-1));

      const res = await decide(started.runId, 'ok', { approved: true, data: { note: 'fine' }, comment: 'go' });
      expect([res.statusCode, res.json()]).toEqual([200, { runId: started.runId, blockId: 'ok', approved: true }]);
      // The 200 came once the run had taken the decision up: its approval block is complete already.
      expect((await events(started.runId)).some((e) => e.type === 'block_complete' && e.blockId === 'ok')).toBe(true);
      expect((await ended(started.runId)).status).toBe('completed');
      const log = await events(started.runId);
      const output = log.find((e) => e.type === 'block_complete' && e.blockId === 'ok')!.output as Json;
      expect(output).toEqual({ approved: true, data: { note: 'fine' }, decidedBy: expect.stringMatching(/^api-key:/), decidedAt: expect.any(String), timedOut: false });
      expect(log.some((e) => e.type === 'block_complete' && e.blockId === 'sent')).toBe(true);
      expect(log.some((e) => e.type === 'block_complete' && e.blockId === 'held')).toBe(false);
      expect(await approvalRow(started.runId)).toMatchObject({ status: 'approved', data: { note: 'fine' }, comment: 'go' });
    });

    it('a member rejects with a JWT; the run takes the other branch', async () => {
      const started = await startApproval();
      const res = await decide(started.runId, 'ok', { approved: false }, ownerJwt);
      expect(res.statusCode).toBe(200);
      await ended(started.runId);
      const log = await events(started.runId);
      expect(log.find((e) => e.type === 'block_complete' && e.blockId === 'ok')!.output).toMatchObject({ approved: false, timedOut: false, decidedBy: expect.stringMatching(/^user:/) });
      expect(log.some((e) => e.type === 'block_complete' && e.blockId === 'held')).toBe(true);
      expect((await approvalRow(started.runId)).status).toBe('rejected');
    });

    it('exactly one of concurrent decisions wins; the others are 409 not_waiting', async () => {
      const started = await startApproval();
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => decide(started.runId, 'ok', { approved: i % 2 === 0, comment: `click ${i}` })));
      const statuses = answers.map((a) => a.statusCode).sort();
      expect(statuses).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
      for (const a of answers.filter((x) => x.statusCode === 409)) expect(a.json().error).toBe('not_waiting');
      const winner = answers.find((a) => a.statusCode === 200)!.json() as { approved: boolean };
      await ended(started.runId);
      const row = await approvalRow(started.runId);
      expect(row.status).toBe(winner.approved ? 'approved' : 'rejected');
      const outputs = (await events(started.runId)).filter((e) => e.type === 'block_complete' && e.blockId === 'ok');
      expect(outputs).toHaveLength(1);
      expect((outputs[0]!.output as Json).approved).toBe(winner.approved);
    });

    it('bad decisions change nothing: data not matching fields (400), another team (404), a stranger (404), a random run (404), a second decision (409)', async () => {
      const started = await startApproval({ prompt: 'ok?', fields: { type: 'object', properties: { amount: { type: 'number', maximum: 10 } }, required: ['amount'] } });
      const unchanged = async () => {
        expect(await approvalRow(started.runId)).toMatchObject({ status: 'pending', decided_by: null, data: null });
        expect((await runRow(started.runId)).status).toBe('waiting');
      };
      const invalid = await decide(started.runId, 'ok', { approved: true, data: { amount: 99 } });
      expect([invalid.statusCode, invalid.json().error]).toEqual([400, 'invalid_body']);
      expect(invalid.json().message).toMatch(/amount/);
      await unchanged();
      const missing = await decide(started.runId, 'ok', { approved: true });
      expect([missing.statusCode, missing.json().error]).toEqual([400, 'invalid_body']);
      await unchanged();
      const foreign = await decide(started.runId, 'ok', { approved: true, data: { amount: 1 } }, foreignKey);
      expect([foreign.statusCode, foreign.json().error]).toEqual([404, 'Run not found']);
      const stranger = await decide(started.runId, 'ok', { approved: true, data: { amount: 1 } }, strangerJwt);
      expect([stranger.statusCode, stranger.json().error]).toEqual([404, 'Run not found']);
      const random = await decide('00000000-0000-4000-8000-000000000000', 'ok', { approved: true });
      expect(random.statusCode).toBe(404);
      const otherBlock = await decide(started.runId, 'q', { approved: true });
      expect([otherBlock.statusCode, otherBlock.json().error]).toEqual([409, 'not_waiting']);
      const notBoolean = await decide(started.runId, 'ok', { approved: 'yes' });
      expect(notBoolean.statusCode).toBe(400);
      await unchanged();

      expect((await decide(started.runId, 'ok', { approved: true, data: { amount: 5 } })).statusCode).toBe(200);
      const again = await decide(started.runId, 'ok', { approved: false, data: { amount: 1 } });
      expect([again.statusCode, again.json().error]).toEqual([409, 'not_waiting']);
      await ended(started.runId);
      expect(await approvalRow(started.runId)).toMatchObject({ status: 'approved', data: { amount: 5 } });
    });

    it('an approval that times out outputs approved: false, timedOut: true and the run goes on; a late decision is 409', async () => {
      const started = await startApproval({ prompt: 'quick?', timeoutSeconds: 1 });
      expect((await ended(started.runId)).status).toBe('completed');
      const output = (await events(started.runId)).find((e) => e.type === 'block_complete' && e.blockId === 'ok')!.output;
      expect(output).toEqual({ approved: false, data: null, decidedBy: null, decidedAt: null, timedOut: true });
      expect((await approvalRow(started.runId)).status).toBe('timed_out');
      const late = await decide(started.runId, 'ok', { approved: true });
      expect([late.statusCode, late.json().error]).toEqual([409, 'not_waiting']);
      expect((await approvalRow(started.runId)).status).toBe('timed_out');
    });

    it('cancelling a waiting run ends it as cancelled and its approval as cancelled; deciding it then is 409', async () => {
      const started = await startApproval();
      const cancel = await stack.app.inject({ method: 'POST', url: `/api/runs/${started.runId}/cancel`, headers: { authorization: `Bearer ${apiKey}` } });
      expect(cancel.statusCode).toBe(202);
      expect((await ended(started.runId)).status).toBe('cancelled');
      expect((await approvalRow(started.runId)).status).toBe('cancelled');
      const late = await decide(started.runId, 'ok', { approved: true });
      expect([late.statusCode, late.json().error]).toEqual([409, 'not_waiting']);
      expect((await events(started.runId)).at(-1)).toMatchObject({ type: 'run_error', executionStatus: 'cancelled' });
    });
  });
});

describe('runs that wait: streams, limits', () => {
  let stack: TestStack;
  let apiKey: string;
  let teamId: string;

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
    const tenant = await credentialFactory(stack).fundedTenant(1_000_000);
    apiKey = tenant.apiKey;
    teamId = tenant.team.id;
  });
  afterAll(() => stack?.close());

  const setting = async (key: 'runs.stream_idle_close_seconds' | 'runs.max_waiting_per_team', value: number) => {
    await upsertSiteSetting(stack.db, key, value);
    stack.deps.settings.invalidate();
  };
  const approvalDeployment = async () => (await publishDirect(stack.db, approvalGraph({ prompt: 'go?' }), { teamId })).deploymentId;
  const sseFrames = (body: string) => body.split('\n\n').filter(Boolean);

  it('a waiting stream sends keep-alives, closes after runs.stream_idle_close_seconds without a terminal event, and resumes with Last-Event-ID', async () => {
    await setting('runs.stream_idle_close_seconds', 2);
    try {
      const started = Date.now();
      const res = await stack.app.inject({
        method: 'POST', url: `/api/released-app/${await approvalDeployment()}/run`, headers: { authorization: `Bearer ${apiKey}` },
        payload: { inputs: { q: 'x' }, format: 'sse' },
      });
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
      const frames = sseFrames(res.body);
      const events = frames.filter((f) => f.startsWith('id:'));
      expect(events.map((f) => /event: (\w+)/.exec(f)![1])).toEqual(['run_start', 'block_start', 'block_waiting']);
      expect(frames.filter((f) => f === ': keep-alive').length).toBeGreaterThanOrEqual(1);
      const runId = res.headers['x-run-id'] as string;
      const lastId = /^id: (\d+)/.exec(events.at(-1)!)![1];

      const decided = await stack.app.inject({ method: 'POST', url: `/api/runs/${runId}/approvals/ok`, headers: { authorization: `Bearer ${apiKey}` }, payload: { approved: true } });
      expect(decided.statusCode).toBe(200);
      const resumed = await stack.app.inject({ method: 'GET', url: `/api/runs/${runId}/events?format=sse`, headers: { authorization: `Bearer ${apiKey}`, 'last-event-id': lastId! } });
      const rest = sseFrames(resumed.body).filter((f) => f.startsWith('id:')).map((f) => /event: (\w+)/.exec(f)![1]);
      expect(rest).toEqual(['block_complete', 'block_end', 'block_start', 'block_complete', 'block_end', 'run_complete']);
    } finally {
      await setting('runs.stream_idle_close_seconds', 300);
    }
  });

  it('NDJSON keep-alives are empty lines', async () => {
    await setting('runs.stream_idle_close_seconds', 1);
    try {
      const res = await stack.app.inject({
        method: 'POST', url: `/api/released-app/${await approvalDeployment()}/run`, headers: { authorization: `Bearer ${apiKey}` }, payload: { inputs: { q: 'x' } },
      });
      const lines = res.body.split('\n');
      expect(lines.filter((l) => l.trim()).map((l) => (JSON.parse(l) as { type: string }).type)).toEqual(['run_start', 'block_start', 'block_waiting']);
      expect(res.body).toMatch(/block_waiting[^\n]*\n\n/);
    } finally {
      await setting('runs.stream_idle_close_seconds', 300);
    }
  });

  it('a run that would wait beyond runs.max_waiting_per_team fails with too_many_waiting_runs', async () => {
    // A team of its own: the streams above left runs of this file's team waiting.
    const fresh = await credentialFactory(stack).fundedTenant(1_000_000);
    await setting('runs.max_waiting_per_team', 1);
    try {
      const { deploymentId } = await publishDirect(stack.db, approvalGraph({ prompt: 'go?' }), { teamId: fresh.team.id });
      const run = () => stack.app.inject({ method: 'POST', url: `/api/released-app/${deploymentId}/run`, headers: { authorization: `Bearer ${fresh.apiKey}` }, payload: { inputs: { q: 'x' }, stream: false } });
      const first = await run();
      expect([first.statusCode, first.json().status]).toEqual([202, 'waiting']);
      // A run that waits has forgotten its recorded start (within its requester's 5 s grace, so
      // not by the dispatcher, which would ask Temporal to start it again to learn it runs).
      const recorded = await stack.db.selectFrom('workflow_starts').select('workflow_id').where('workflow_id', '=', workflowIds.appRun(first.json().runId)).execute();
      expect(recorded).toEqual([]);
      const second = await run();
      expect(second.statusCode).toBe(200);
      expect(second.json()).toMatchObject({ status: 'failed', error: expect.stringMatching(/too_many_waiting_runs/) });
      const rows = await stack.db.selectFrom('run_approvals').select('run_id').where('run_id', '=', second.json().runId).execute();
      expect(rows).toEqual([]);
    } finally {
      await setting('runs.max_waiting_per_team', 1000);
    }
  });
});
