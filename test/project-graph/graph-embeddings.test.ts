import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDocument } from '../../shared/documents/service.js';
import { createProject } from '../../shared/identity/service.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { fakeEmbedding, startFakeLlm, type FakeLlm, type FakeLlmOptions } from '../app-runs/llm-server.js';
import { runCli } from '../harness/cli.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';

/** Tests that start the CLI as a process: each start takes seconds on a loaded machine. */
const CLI_TIMEOUT_MS = 120_000;
const operator = { kind: 'operator' } as const;
const EMBEDDING_MODEL = 'graph-embedder';
/** The fake provider's embeddings: "car" is "automobile" to it, so the two embed alike while sharing no letters. */
const provider: FakeLlmOptions = { synonyms: { car: 'automobile' } };

describe('project graph embeddings (issue 24: graph.config embeddingModel, docs/project-graph.md)', () => {
  let stack: TestStack;
  let llm: FakeLlm;
  let teamId: string;
  let jwt: string;

  const setGraph = async (value: Record<string, unknown>) => {
    await upsertSiteSetting(stack.db, 'graph.config', value);
    stack.deps.settings.invalidate();
  };
  const withEmbeddings = () => setGraph({ enabled: true, extractor: 'builtin', embeddingModel: EMBEDDING_MODEL });
  const build = async (projectId: string) => {
    const result = await runCli(['graph', 'build', '--project', projectId], stack.env);
    expect(result.code, result.stderr).toBe(0);
    return result.json as { generationId: string; facts: number };
  };
  const search = (projectId: string, body: Record<string, unknown>) => stack.app.inject({
    method: 'POST', url: `/projects/${projectId}/graph/search`, headers: { authorization: `Bearer ${jwt}` }, payload: body,
  });
  const facts = async (projectId: string, query: string, limit: number) => {
    const response = await search(projectId, { query, limit });
    expect(response.statusCode, response.body).toBe(200);
    return (response.json().results as Array<{ fact: string }>).map((r) => r.fact);
  };
  const project = async (name: string) => (await createProject(stack.db, { teamId, name })).id;
  const emptyDocument = (projectId: string, name: string) => createDocument(stack.db, operator, { projectId, name, graph: { blocks: [], edges: [] } });
  const embeddingCalls = () => llm.requests.filter((r) => r.path.endsWith('/embeddings'));

  beforeAll(async () => {
    llm = await startFakeLlm(provider);
    stack = await createTestStack({ LLM_BASE_URL: llm.url });
    const make = credentialFactory(stack);
    const owner = await make.user('owner');
    teamId = (await make.team(owner.id)).id;
    jwt = await make.jwt(owner.id);
  });
  afterAll(async () => {
    await stack?.close();
    await llm?.close();
  });

  it('leaves facts unembedded when no embedding model is configured, and calls no provider', async () => {
    await setGraph({ enabled: true, extractor: 'builtin' });
    const projectId = await project('Plain');
    await emptyDocument(projectId, 'Plain notes');
    const { generationId } = await build(projectId);
    const rows = await stack.db.selectFrom('graph_facts').select('embedding').where('generation_id', '=', generationId).execute();
    expect(rows).toEqual([{ embedding: null }]);
    const generation = await stack.db.selectFrom('graph_generations').select('embedding_model').where('id', '=', generationId).executeTakeFirstOrThrow();
    expect(generation.embedding_model).toBeNull();
    expect(await facts(projectId, 'plain', 10)).toHaveLength(1);
    expect(embeddingCalls()).toEqual([]);
  }, CLI_TIMEOUT_MS);

  it('embeds every fact of a built generation with the configured model (vectors of the model\'s length, in fact order)', async () => {
    await withEmbeddings();
    const projectId = await project('Embedded');
    for (const name of ['Lighthouse keeper', 'Harbour master', 'Tide tables']) await emptyDocument(projectId, name);
    const { generationId, facts: count } = await build(projectId);
    expect(count).toBe(3);
    const rows = await stack.db.selectFrom('graph_facts').select(['fact', 'embedding']).where('generation_id', '=', generationId).execute();
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      expect(row.embedding).toHaveLength(16);
      // Stored as real[] (single precision): the provider's vector for this very fact, not a neighbour's.
      const expected = fakeEmbedding(row.fact, provider);
      row.embedding!.forEach((x, i) => expect(x).toBeCloseTo(expected[i]!, 5));
    }
    const generation = await stack.db.selectFrom('graph_generations').select('embedding_model').where('id', '=', generationId).executeTakeFirstOrThrow();
    expect(generation.embedding_model).toBe(EMBEDDING_MODEL);
    const call = embeddingCalls().at(-1)!;
    expect(call.body).toEqual({ model: EMBEDDING_MODEL, input: rows.map(() => expect.any(String)) });
  }, CLI_TIMEOUT_MS);

  describe('search', () => {
    let projectId: string;
    const query = 'car engine repair';
    const [kayak, sofa, near] = ['Kayak repair, repair, repair', 'Sofa repair, repair', 'Automobile repair'].map((name) => `Document "${name}" has no blocks`);

    beforeAll(async () => {
      await withEmbeddings();
      projectId = await project('Workshop');
      // All three share "repair" with the query, and only that word (too little for the trigram
      // retriever): full text ranks them by how often they say it. The last one also means "car",
      // which only the embeddings know (the fake provider's synonym): its vector is the nearest.
      for (const name of ['Kayak repair, repair, repair', 'Sofa repair, repair', 'Automobile repair']) await emptyDocument(projectId, name);
      await build(projectId);
    }, CLI_TIMEOUT_MS);

    it('ranks a fact near in meaning (a synonym only the embeddings know) higher, into the results', async () => {
      await setGraph({ enabled: true, extractor: 'builtin' });
      expect(await facts(projectId, query, 10)).toEqual([kayak, sofa, near]);
      expect(await facts(projectId, query, 2)).toEqual([kayak, sofa]);

      await withEmbeddings();
      const before = embeddingCalls().length;
      // Fused ranks: kayak 1st (text) + 2nd (vector) beats near 3rd + 1st, which beats sofa 2nd + 3rd.
      expect(await facts(projectId, query, 10)).toEqual([kayak, near, sofa]);
      expect(await facts(projectId, query, 2)).toEqual([kayak, near]);
      // The query is embedded once per search, with the generation's model.
      expect(embeddingCalls().slice(before).map((r) => r.body)).toEqual([{ model: EMBEDDING_MODEL, input: [query] }, { model: EMBEDDING_MODEL, input: [query] }]);
    });

    it('ranks by text only when the configured model is not the one that embedded the generation (no provider call)', async () => {
      await setGraph({ enabled: true, extractor: 'builtin', embeddingModel: 'another-embedder' });
      const before = embeddingCalls().length;
      expect(await facts(projectId, query, 10)).toEqual([kayak, sofa, near]);
      expect(embeddingCalls()).toHaveLength(before);
    });

    it('still answers 200 from the text retrievers when the embeddings provider fails', async () => {
      await withEmbeddings();
      llm.configure({ ...provider, embeddingsStatus: 503 });
      try {
        expect(await facts(projectId, query, 10)).toEqual([kayak, sofa, near]);
      } finally {
        llm.configure(provider);
      }
    });
  });

  it('fails a build whose facts cannot be embedded, with the reason, and keeps the previous generation active', async () => {
    await withEmbeddings();
    const projectId = await project('Failing');
    await emptyDocument(projectId, 'Observatory log');
    const first = await build(projectId);
    await emptyDocument(projectId, 'Telescope manual');
    llm.configure({ ...provider, embeddingsStatus: 503 });
    try {
      const failed = await runCli(['graph', 'build', '--project', projectId], stack.env);
      expect(failed.code).not.toBe(0);
      expect(String(failed.error?.message)).toMatch(/^Embedding the facts with "graph-embedder" failed: Embeddings provider failed \(HTTP 503\)/);
    } finally {
      llm.configure(provider);
    }
    const generations = await stack.db.selectFrom('graph_generations').select(['id', 'status']).where('project_id', '=', projectId).execute();
    expect(generations).toEqual([{ id: first.generationId, status: 'active' }]);
  }, CLI_TIMEOUT_MS);

  it('embeds the facts of a hand-submitted episode; a provider refusal fails the job with the reason', async () => {
    await withEmbeddings();
    const projectId = await project('Episodes');
    const submit = async (content: string) => {
      const response = await stack.app.inject({ method: 'POST', url: `/projects/${projectId}/graph/episodes`, headers: { authorization: `Bearer ${jwt}` }, payload: { content } });
      expect(response.statusCode, response.body).toBe(202);
      return response.json().jobId as string;
    };
    const settled = (jobId: string) => until(async () => {
      const view = (await stack.app.inject({ method: 'GET', url: `/projects/${projectId}/graph/jobs/${jobId}`, headers: { authorization: `Bearer ${jwt}` } })).json();
      return ['completed', 'failed'].includes(view.status) && view;
    }, 30_000, `job ${jobId} to finish`);
    const worker = await stack.startWorker();
    try {
      const done = await settled(await submit('Ada Lovelace wrote the first program. Charles Babbage built the engine.'));
      expect(done).toMatchObject({ status: 'completed', result: { facts: 2 } });
      const rows = await stack.db.selectFrom('graph_facts').select(['fact', 'embedding']).where('episode_id', '=', done.result.episodeId).execute();
      expect(rows).toHaveLength(2);
      for (const row of rows) expect(row.embedding).toHaveLength(16);

      llm.configure({ ...provider, embeddingsStatus: 404, errorMessage: `The model '${EMBEDDING_MODEL}' does not exist` });
      const jobId = await submit('Grace Hopper found a moth.');
      const failed = await settled(jobId);
      expect(failed.status).toBe('failed');
      expect(failed.error).toBe(`Embedding the facts with "${EMBEDDING_MODEL}" failed: Embeddings provider rejected the request (HTTP 404): The model '${EMBEDDING_MODEL}' does not exist`);
      expect(await stack.db.selectFrom('graph_episodes').select('id').where('job_id', '=', jobId).execute()).toEqual([]);
    } finally {
      llm.configure(provider);
      await worker.shutdown();
    }
  }, 90_000);

  // Last: it stops the provider for good.
  it('still answers 200 from the text retrievers when the embeddings server is down', async () => {
    await withEmbeddings();
    const projectId = await project('Offline');
    await emptyDocument(projectId, 'Seismograph readings');
    await build(projectId);
    await llm.close();
    const response = await search(projectId, { query: 'seismograph' });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().results).toEqual([expect.objectContaining({ fact: 'Document "Seismograph readings" has no blocks' })]);
  }, CLI_TIMEOUT_MS);
});
