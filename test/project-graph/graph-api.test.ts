import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDocument, updateDocument } from '../../shared/documents/service.js';
import { newId } from '../../shared/ids.js';
import { createProject } from '../../shared/identity/service.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { runCli } from '../harness/cli.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';

/** Tests that start the CLI as a process: each start takes seconds on a loaded machine. */
const CLI_TIMEOUT_MS = 120_000;
const operator = { kind: 'operator' } as const;

describe('project graph API (spec §4.5, §7.4; CONTRACTS.md "Project graph")', () => {
  let stack: TestStack;
  let projectId: string;
  let otherProjectId: string;
  let jwt: string;
  let outsiderJwt: string;
  let apiKey: string;

  const call = (method: 'GET' | 'POST', url: string, token: string, body?: unknown) => stack.app.inject({
    method, url, headers: { authorization: `Bearer ${token}` }, ...(body === undefined ? {} : { payload: body as object }),
  });
  const graphUrl = (path: string, project = projectId) => `/projects/${project}/graph${path}`;
  const search = (body: Record<string, unknown>, token = jwt) => call('POST', graphUrl('/search'), token, body);
  const setGraph = async (value: unknown) => {
    await upsertSiteSetting(stack.db, 'graph.config', value);
    stack.deps.settings.invalidate();
  };
  const build = async (project = projectId) => {
    const result = await runCli(['graph', 'build', '--project', project], stack.env);
    expect(result.code, result.stderr).toBe(0);
    return result.json as { generationId: string; facts: number };
  };
  const insertFile = async (project: string, teamId: string, name: string) => {
    const id = newId();
    await stack.db.insertInto('files').values({
      id, project_id: project, team_id: teamId, uploaded_by: null, api_key_id: null, size: 12, content_type: 'application/pdf',
      original_name: name, sha256: 'a'.repeat(64), storage_key: `${id.slice(0, 2)}/${id}`,
    }).execute();
    return id;
  };
  const factCount = async () => Number((await stack.db.selectFrom('graph_facts').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

  let teamId: string;
  beforeAll(async () => {
    stack = await createTestStack();
    const make = credentialFactory(stack);
    const owner = await make.user('owner');
    const outsider = await make.user('outsider');
    teamId = (await make.team(owner.id)).id;
    projectId = (await createProject(stack.db, { teamId, name: 'Memory' })).id;
    otherProjectId = (await createProject(stack.db, { teamId, name: 'Other' })).id;
    jwt = await make.jwt(owner.id);
    outsiderJwt = await make.jwt(outsider.id);
    apiKey = (await make.apiKey(teamId, owner.id)).token;
  });
  afterAll(async () => {
    await stack?.close();
  });
  beforeEach(async () => {
    await setGraph({ enabled: true, extractor: 'builtin' });
  });

  describe('the switch', () => {
    it('answers the same 503 on every endpoint while the feature is off (the default), and writes nothing', async () => {
      await stack.db.deleteFrom('site_settings').where('key', '=', 'graph.config').execute();
      stack.deps.settings.invalidate();
      const answers = [
        await call('GET', graphUrl('/status'), jwt),
        await call('POST', graphUrl('/episodes'), jwt, { content: 'Ada wrote the first program.' }),
        await call('GET', graphUrl(`/jobs/${randomUUID()}`), jwt),
        await search({ query: 'anything' }),
      ];
      for (const answer of answers) {
        expect(answer.statusCode, answer.body).toBe(503);
        expect(answer.json()).toEqual({ error: 'graph_unavailable', message: 'The project graph is turned off' });
      }
      expect(await stack.db.selectFrom('graph_jobs').select('id').execute()).toEqual([]);
      expect(await stack.db.selectFrom('workflow_starts').select('workflow_id').execute()).toEqual([]);
    });

    it('answers 503 while the configuration is incomplete (llm extractor without a model)', async () => {
      await setGraph({ enabled: true, extractor: 'llm' });
      for (const answer of [await call('GET', graphUrl('/status'), jwt), await search({ query: 'x' }), await call('POST', graphUrl('/episodes'), jwt, { content: 'x' })]) {
        expect(answer.statusCode).toBe(503);
        expect(answer.json()).toEqual({ error: 'graph_unavailable', message: 'The project graph configuration is incomplete' });
      }
    });

    it('reports the feature, configuration and store state once on, with an API key too', async () => {
      const response = await call('GET', graphUrl('/status'), apiKey);
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toEqual({
        enabled: true, configured: true, extractor: 'builtin', store: { state: 'no_active_generation', generationId: null, facts: 0, activatedAt: null },
      });
    });

    it('keeps the public feature endpoint free of graph.config detail', async () => {
      await setGraph({ enabled: true, extractor: 'llm', model: 'secret-model-name' });
      await upsertSiteSetting(stack.db, 'graph.public', { open: true, label: 'Memory' });
      stack.deps.settings.invalidate();
      const response = await stack.app.inject({ method: 'GET', url: '/public/features/graph' });
      expect(response.json()).toEqual({ success: true, data: { open: true, label: 'Memory' } });
      expect(response.body).not.toMatch(/secret-model-name|llm|builtin|extractor/);
      await stack.db.deleteFrom('site_settings').where('key', '=', 'graph.public').execute();
    });
  });

  describe('access', () => {
    it('answers 401 without credentials and 404 to a caller outside the project\'s team', async () => {
      expect((await stack.app.inject({ method: 'GET', url: graphUrl('/status') })).statusCode).toBe(401);
      const outsider = await call('GET', graphUrl('/status'), outsiderJwt);
      expect(outsider.statusCode).toBe(404);
      expect(outsider.json().error).toBe('Project not found');
      expect((await call('GET', graphUrl('/status', 'not-a-uuid'), jwt)).statusCode).toBe(404);
    });

    it('answers 404 for another project\'s job, a missing job and a malformed job id', async () => {
      const accepted = await call('POST', graphUrl('/episodes', otherProjectId), jwt, { content: 'Grace found a moth in the relay.' });
      expect(accepted.statusCode, accepted.body).toBe(202);
      const { jobId } = accepted.json();
      expect((await call('GET', graphUrl(`/jobs/${jobId}`, otherProjectId), jwt)).json()).toMatchObject({ jobId, status: 'queued' });
      for (const id of [jobId, randomUUID(), 'nope']) {
        const response = await call('GET', graphUrl(`/jobs/${id}`), jwt);
        expect(response.statusCode).toBe(404);
        expect(response.json()).toEqual({ error: 'Graph job not found', message: 'Graph job not found' });
      }
    });
  });

  describe('episodes', () => {
    it('accepts an episode with 202 and a job id, recording the job and its workflow start together', async () => {
      const response = await call('POST', graphUrl('/episodes'), apiKey, { name: 'History', content: 'Ada Lovelace wrote the first program.' });
      expect(response.statusCode, response.body).toBe(202);
      const { jobId } = response.json();
      const job = await stack.db.selectFrom('graph_jobs').selectAll().where('id', '=', jobId).executeTakeFirstOrThrow();
      expect(job).toMatchObject({ project_id: projectId, kind: 'ingest', status: 'queued', input: { name: 'History', content: 'Ada Lovelace wrote the first program.' } });
      // No worker polls this file's queue: Temporal holds the execution until one does.
      const description = await stack.deps.temporal.client.workflow.getHandle(`graph-ingest-${jobId}`).describe();
      expect(description.type).toBe('graphIngestWorkflow');
      expect(description.status.name).toBe('RUNNING');
    });

    it.each([
      ['no content', {}],
      ['empty content', { content: '   ' }],
      ['content that is not text', { content: 42 }],
      ['a name too long', { name: 'n'.repeat(201), content: 'x' }],
    ])('refuses %s with 400 and records nothing', async (_label, body) => {
      const before = await stack.db.selectFrom('graph_jobs').select('id').execute();
      const response = await call('POST', graphUrl('/episodes'), jwt, body);
      expect(response.statusCode).toBe(400);
      expect(response.json().error).toBe('invalid_request');
      expect(await stack.db.selectFrom('graph_jobs').select('id').execute()).toEqual(before);
    });
  });

  describe('search', () => {
    it.each([
      ['mode as_of', { query: 'x', mode: 'as_of' }],
      ['mode history', { query: 'x', mode: 'history' }],
      ['any other mode', { query: 'x', mode: 'yesterday' }],
      ['an asOf field', { query: 'x', asOf: '2026-01-01T00:00:00Z' }],
      ['an as_of field', { query: 'x', as_of: '2026-01-01T00:00:00Z' }],
      ['asOf without a query', { asOf: '2026-01-01T00:00:00Z' }],
    ])('refuses %s with 400 graph_search_current_only', async (_label, body) => {
      const response = await search(body);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ error: 'graph_search_current_only' });
    });

    it('refuses a missing query or a limit out of range with 400 invalid_request', async () => {
      expect((await search({})).json().error).toBe('invalid_request');
      expect((await search({ query: 'x', limit: 0 })).statusCode).toBe(400);
      expect((await search({ query: 'x', limit: 51 })).statusCode).toBe(400);
    });

    it('answers the stable 503 while the project has no active generation', async () => {
      const response = await search({ query: 'anything', mode: 'current' });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toEqual({ error: 'graph_unavailable', message: 'The project has no active memory generation; run `graph build`' });
    });

    it('finds a document by a word of its blocks after `graph build`, with its evidence', async () => {
      const doc = await createDocument(stack.db, operator, {
        projectId, name: 'Invoice helper', graph: {
          blocks: [
            { id: 'q', type: 'input', name: 'customer', config: { valueType: 'string' } },
            { id: 't', type: 'template', name: 'letter', config: { template: 'Dear {{q}}, your zanzibarite invoice is attached.' } },
            { id: 'o', type: 'output', name: 'result', config: { value: '{{t}}' } },
          ],
          edges: [{ from: 'q', to: 't' }, { from: 't', to: 'o' }],
        },
      });
      const built = await build();
      expect(built.facts).toBeGreaterThanOrEqual(1);
      const response = await search({ query: 'zanzibarite' });
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json();
      expect(body.generationId).toBe(built.generationId);
      expect(body.results).toHaveLength(1);
      expect(body.results[0].fact).toContain('Document "Invoice helper"');
      expect(body.results[0].fact).toContain('zanzibarite invoice');
      expect(body.results[0].evidence).toEqual([{ sourceType: 'database', sourceVersionId: expect.stringMatching(/^[0-9a-f-]{36}$/), locator: { table: 'documents', id: doc.id, name: 'Invoice helper' } }]);
      // By its name too (trigram similarity finds a near spelling).
      expect((await search({ query: 'Invoice helpr' })).json().results.map((r: { fact: string }) => r.fact)).toEqual([body.results[0].fact]);
      const status = (await call('GET', graphUrl('/status'), jwt)).json();
      expect(status.store).toMatchObject({ state: 'active', generationId: built.generationId, facts: built.facts });
    }, CLI_TIMEOUT_MS);

    it('drops a fact whose source row changed after the generation was built', async () => {
      const doc = await createDocument(stack.db, operator, { projectId, name: 'Quokka notes', graph: { blocks: [{ id: 't', type: 'template', name: 'note', config: { template: 'quokkas smile' } }], edges: [] } });
      await createDocument(stack.db, operator, { projectId, name: 'Quokka care', graph: { blocks: [{ id: 't', type: 'template', name: 'care', config: { template: 'feed quokkas leaves' } }], edges: [] } });
      await build();
      expect((await search({ query: 'quokkas' })).json().results).toHaveLength(2);
      await updateDocument(stack.db, operator, doc.id, { graph: { blocks: [{ id: 't', type: 'template', name: 'note', config: { template: 'quokkas frown' } }], edges: [] } });
      const after = await search({ query: 'quokkas' });
      expect(after.statusCode).toBe(200);
      expect(after.json().results.map((r: { fact: string }) => r.fact)).toEqual([expect.stringContaining('Quokka care')]);
      // A rebuild quotes the new text.
      await build();
      expect((await search({ query: 'frown' })).json().results).toEqual([expect.objectContaining({ fact: expect.stringContaining('quokkas frown') })]);
    }, CLI_TIMEOUT_MS);

    it('drops the facts of a stored file deleted after the build, and of a deleted document', async () => {
      const fileId = await insertFile(projectId, teamId, 'platypus-report.pdf');
      const doc = await createDocument(stack.db, operator, { projectId, name: 'Platypus diary', graph: { blocks: [], edges: [] } });
      await build();
      const before = (await search({ query: 'platypus' })).json().results;
      expect(before).toHaveLength(2);
      const fileHit = before.find((r: { evidence: Array<{ sourceType: string }> }) => r.evidence[0]!.sourceType === 'file');
      expect(fileHit.evidence[0].locator).toEqual({ fileId, name: 'platypus-report.pdf', sha256: 'a'.repeat(64) });
      await stack.db.updateTable('files').set({ deleted_at: new Date() }).where('id', '=', fileId).execute();
      expect((await search({ query: 'platypus' })).json().results.map((r: { fact: string }) => r.fact)).toEqual([expect.stringContaining('Platypus diary')]);
      await stack.db.updateTable('documents').set({ deleted_at: new Date() }).where('id', '=', doc.id).execute();
      expect((await search({ query: 'platypus' })).json().results).toEqual([]);
    }, CLI_TIMEOUT_MS);

    it('never returns facts of hand-submitted episodes, even word for word', async () => {
      const accepted = await call('POST', graphUrl('/episodes'), jwt, { content: 'The wombat council meets on Tuesdays.' });
      const { jobId } = accepted.json();
      const worker = await stack.startWorker();
      try {
        await until(async () => (await call('GET', graphUrl(`/jobs/${jobId}`), jwt)).json().status === 'completed', 20_000, 'the episode job to complete');
      } finally {
        await worker.shutdown();
      }
      const handFacts = await stack.db.selectFrom('graph_facts').select(['fact', 'generation_id']).where('fact', 'like', '%wombat%').execute();
      expect(handFacts).toEqual([{ fact: 'The wombat council meets on Tuesdays.', generation_id: null }]);
      // Planted into the active generation's rows without provenance: still not trusted.
      const active = await stack.db.selectFrom('graph_generations').select('id').where('project_id', '=', projectId).where('status', '=', 'active').executeTakeFirstOrThrow();
      await stack.db.updateTable('graph_facts').set({ generation_id: active.id }).where('fact', 'like', '%wombat%').execute();
      const response = await search({ query: 'wombat council' });
      expect(response.statusCode).toBe(200);
      expect(response.json().results).toEqual([]);
    }, 60_000);

    it('keeps one active generation per project; the previous one is retired and its facts expired', async () => {
      const first = await build(otherProjectId);
      const second = await build(otherProjectId);
      const generations = await stack.db.selectFrom('graph_generations').select(['id', 'status']).where('project_id', '=', otherProjectId).orderBy('created_at').execute();
      expect(generations.filter((g) => g.status === 'active')).toEqual([{ id: second.generationId, status: 'active' }]);
      expect(generations.find((g) => g.id === first.generationId)?.status).toBe('retired');
      const stale = await stack.db.selectFrom('graph_facts').select('expired_at').where('generation_id', '=', first.generationId).execute();
      expect(stale.every((f) => f.expired_at !== null)).toBe(true);
      const unknown = await runCli(['graph', 'build', '--project', randomUUID()], stack.env);
      expect(unknown.code).not.toBe(0);
      expect(await factCount()).toBeGreaterThan(0);
    }, CLI_TIMEOUT_MS);

    it('answers the stable 503, never raw candidates, when verification cannot run', async () => {
      await createDocument(stack.db, operator, { projectId, name: 'Axolotl tank', graph: { blocks: [], edges: [] } });
      await build();
      expect((await search({ query: 'axolotl' })).json().results).toHaveLength(1);
      // The version function verification computes goes missing: the check cannot run at all.
      await sql`ALTER FUNCTION graph_version_uuid(text) RENAME TO graph_version_uuid_away`.execute(stack.db);
      try {
        const response = await search({ query: 'axolotl' });
        expect(response.statusCode).toBe(503);
        expect(response.json()).toEqual({ error: 'graph_unavailable', message: 'The graph store is unavailable; retry shortly' });
        expect(response.headers['retry-after']).toBe('5');
      } finally {
        await sql`ALTER FUNCTION graph_version_uuid_away(text) RENAME TO graph_version_uuid`.execute(stack.db);
      }
    }, CLI_TIMEOUT_MS);

    it('does not return facts that are no longer current (invalid_at passed)', async () => {
      await createDocument(stack.db, operator, { projectId, name: 'Narwhal log', graph: { blocks: [], edges: [] } });
      const { generationId } = await build();
      expect((await search({ query: 'narwhal' })).json().results).toHaveLength(1);
      await stack.db.updateTable('graph_facts').set({ invalid_at: new Date(Date.now() - 1000) }).where('generation_id', '=', generationId).where('fact', 'like', '%Narwhal%').execute();
      expect((await search({ query: 'narwhal' })).json().results).toEqual([]);
    }, CLI_TIMEOUT_MS);
  });
});
