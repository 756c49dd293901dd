import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createProject } from '../../shared/identity/service.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { startFakeLlm, type FakeLlm } from '../app-runs/llm-server.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';

const JOB_TIMEOUT_MS = 30_000;

describe('graph-ingest workflow (spec §4.5; docs/project-graph.md)', () => {
  let stack: TestStack;
  let llm: FakeLlm;
  let projectId: string;
  let jwt: string;
  let child: ChildProcess | undefined;

  const submit = async (body: Record<string, unknown>) => {
    const response = await stack.app.inject({ method: 'POST', url: `/projects/${projectId}/graph/episodes`, headers: { authorization: `Bearer ${jwt}` }, payload: body });
    expect(response.statusCode, response.body).toBe(202);
    return response.json().jobId as string;
  };
  const job = async (jobId: string) =>
    (await stack.app.inject({ method: 'GET', url: `/projects/${projectId}/graph/jobs/${jobId}`, headers: { authorization: `Bearer ${jwt}` } })).json();
  const settled = (jobId: string) => until(async () => {
    const view = await job(jobId);
    return ['completed', 'failed'].includes(view.status) && view;
  }, JOB_TIMEOUT_MS, `job ${jobId} to finish`);
  const setGraph = async (value: unknown) => {
    await upsertSiteSetting(stack.db, 'graph.config', value);
    stack.deps.settings.invalidate();
  };

  beforeAll(async () => {
    llm = await startFakeLlm();
    stack = await createTestStack({ LLM_BASE_URL: llm.url });
    const make = credentialFactory(stack);
    const owner = await make.user('owner');
    const teamId = (await make.team(owner.id)).id;
    projectId = (await createProject(stack.db, { teamId, name: 'Episodes' })).id;
    jwt = await make.jwt(owner.id);
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await stack?.close();
    await llm?.close();
  });

  it('an accepted job survives having no worker: it waits queued, and completes once a worker starts', async () => {
    await setGraph({ enabled: true, extractor: 'builtin' });
    const jobId = await submit({ name: 'Lab notes', content: 'Marie Curie discovered polonium. Pierre Curie worked with her.\nThey shared a prize.' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await job(jobId)).toEqual({ jobId, status: 'queued' });

    const worker = await stack.startWorker();
    try {
      const done = await settled(jobId);
      expect(done).toEqual({ jobId, status: 'completed', result: { episodeId: expect.any(String), entities: expect.any(Number), facts: 3 } });
      const facts = await stack.db.selectFrom('graph_facts').selectAll().where('episode_id', '=', done.result.episodeId).orderBy('fact').execute();
      expect(facts.map((f) => f.fact)).toEqual(['Marie Curie discovered polonium.', 'Pierre Curie worked with her.', 'They shared a prize.']);
      // Graphiti's four timestamps: world time from now on, system time now, nothing invalid or expired yet.
      for (const fact of facts) {
        expect(fact.generation_id).toBeNull();
        expect(fact.valid_at).toBeInstanceOf(Date);
        expect(fact.created_at).toBeInstanceOf(Date);
        expect(fact.invalid_at).toBeNull();
        expect(fact.expired_at).toBeNull();
      }
      const entities = await stack.db.selectFrom('graph_entities').select('name').where('episode_id', '=', done.result.episodeId).execute();
      expect(entities.map((e) => e.name)).toEqual(expect.arrayContaining(['Marie Curie', 'Pierre Curie']));
    } finally {
      await worker.shutdown();
    }
  }, 60_000);

  it('a job whose worker is stopped mid-extraction completes on the next worker', async () => {
    await setGraph({ enabled: true, extractor: 'llm', model: 'graph-model' });
    llm.configure({ stall: 'headers' });
    const first = await stack.startWorker();
    const jobId = await submit({ content: 'Alan Turing proposed the imitation game in 1950.' });
    await until(async () => (await job(jobId)).status === 'running' && llm.requests.length > 0, JOB_TIMEOUT_MS, 'the extraction to start');
    await first.shutdown();
    expect((await job(jobId)).status).toBe('running');

    llm.configure({
      text: JSON.stringify({
        entities: [{ name: 'Alan Turing', kind: 'person' }, { name: 'imitation game', kind: 'idea' }],
        facts: [{ fact: 'Alan Turing proposed the imitation game.', relation: 'proposed', source: 'Alan Turing', target: 'imitation game', valid_at: '1950-10-01T00:00:00Z', invalid_at: null }],
      }),
    });
    const second = await stack.startWorker();
    try {
      const done = await settled(jobId);
      expect(done).toMatchObject({ status: 'completed', result: { entities: 2, facts: 1 } });
      const [fact] = await stack.db.selectFrom('graph_facts').selectAll().where('episode_id', '=', done.result.episodeId).execute();
      expect(fact).toMatchObject({ fact: 'Alan Turing proposed the imitation game.', relation: 'proposed', generation_id: null });
      expect(fact!.valid_at.toISOString()).toBe('1950-10-01T00:00:00.000Z');
      expect(fact!.source_entity_id).not.toBeNull();
      const last = llm.requests.at(-1)!;
      expect(last.body.model).toBe('graph-model');
      // One episode for the job, however many attempts it took.
      expect(await stack.db.selectFrom('graph_episodes').select('id').where('job_id', '=', jobId).execute()).toHaveLength(1);
    } finally {
      await second.shutdown();
    }
  }, 90_000);

  it('a job whose worker process is SIGKILLed mid-extraction completes on the next worker, with one episode', async () => {
    await setGraph({ enabled: true, extractor: 'llm', model: 'graph-model' });
    llm.configure({ stall: 'headers' });
    // The first worker is a real process running the production entry, so it can really be killed.
    child = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
      env: { ...stack.env, WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath') }, stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child!.once('exit', resolve));
    const requestsBefore = llm.requests.length;
    const jobId = await submit({ content: 'Grace Hopper wrote the first compiler in 1952.' });
    // The child is inside the extraction: the job is running and the model server has its request (left unanswered).
    await until(async () => (await job(jobId)).status === 'running' && llm.requests.length > requestsBefore, 60_000, 'the child worker to start the extraction');
    child.kill('SIGKILL');
    await exited;
    const killedAt = Date.now();
    expect((await job(jobId)).status).toBe('running');

    llm.configure({
      text: JSON.stringify({
        entities: [{ name: 'Grace Hopper', kind: 'person' }, { name: 'A-0 compiler', kind: 'thing' }],
        facts: [{ fact: 'Grace Hopper wrote the first compiler.', relation: 'wrote', source: 'Grace Hopper', target: 'A-0 compiler', valid_at: '1952-01-01T00:00:00Z', invalid_at: null }],
      }),
    });
    const next = await stack.startWorker();
    try {
      const done = await settled(jobId);
      expect(done).toMatchObject({ status: 'completed', result: { entities: 2, facts: 1 } });
      // Noticed by the heartbeat timeout (10 s), not the 3-minute start-to-close timeout.
      expect(Date.now() - killedAt).toBeLessThan(60_000);
      // The killed attempt's request, then the next attempt's.
      expect(llm.requests.length - requestsBefore).toBeGreaterThanOrEqual(2);
      const episodes = await stack.db.selectFrom('graph_episodes').select('id').where('job_id', '=', jobId).execute();
      expect(episodes).toEqual([{ id: done.result.episodeId }]);
      const facts = await stack.db.selectFrom('graph_facts').selectAll().where('episode_id', '=', done.result.episodeId).execute();
      expect(facts).toHaveLength(1);
      expect(facts[0]).toMatchObject({ fact: 'Grace Hopper wrote the first compiler.', relation: 'wrote', generation_id: null });
      expect(facts[0]!.valid_at.toISOString()).toBe('1952-01-01T00:00:00.000Z');
      expect(facts[0]!.source_entity_id).not.toBeNull();
      const entities = await stack.db.selectFrom('graph_entities').select('name').where('episode_id', '=', done.result.episodeId).execute();
      expect(entities.map((e) => e.name)).toEqual(expect.arrayContaining(['Grace Hopper', 'A-0 compiler']));
    } finally {
      await next.shutdown();
    }
  }, 120_000);

  it('fails the job, with the reason, when the model does not answer the graph format', async () => {
    await setGraph({ enabled: true, extractor: 'llm', model: 'graph-model' });
    llm.configure({ text: 'I would rather not.' });
    const worker = await stack.startWorker();
    try {
      const jobId = await submit({ content: 'Something happened.' });
      expect(await settled(jobId)).toEqual({ jobId, status: 'failed', error: 'The model answered no JSON object' });
      expect(await stack.db.selectFrom('graph_episodes').select('id').where('job_id', '=', jobId).execute()).toEqual([]);
    } finally {
      await worker.shutdown();
    }
  }, 60_000);
});
