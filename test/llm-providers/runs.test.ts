import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { createLlmBlockActivities } from '../../activities/app-runs/llm-block.js';
import type { Graph } from '../../shared/documents/graph.js';
import { putLlmProvider } from '../../shared/llm-providers/service.js';
import { createKeyRing, keyIdOf } from '../../shared/secrets/key-ring.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { startFakeLlm, type FakeLlm } from '../app-runs/llm-server.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

const ENV_KEY = 'sk-env-default-key-0000';
const ACME_KEY = 'sk-acme-team-secret-9f8e7d6c';
// The server runs with a rotated key ring: SECRETS_KEY = NEW, and OLD (the key before) in SECRETS_KEY_PREVIOUS.
const OLD = randomBytes(32);
const NEW = randomBytes(32);

type Event = Record<string, unknown>;

// llm blocks against the paying team's providers, end to end: API → workflow → activity → fake
// OpenAI-compatible servers that insist on their own key.
describe('llm blocks with team providers', () => {
  let stack: TestStack;
  let envLlm: FakeLlm;
  let acmeLlm: FakeLlm;
  let otherLlm: FakeLlm;
  let teamId: string;
  let ownerId: string;
  let ownerJwt: string;
  let runKey: string;

  const graph = (config: Record<string, unknown>): Graph => ({
    blocks: [
      { id: 'q', type: 'input', name: 'q', config: { valueType: 'string', required: true } },
      { id: 'ask', type: 'llm', name: 'ask', config: { model: 'test-model', prompt: 'Say {{q}}', ...config } },
      { id: 'o', type: 'output', name: 'o', config: { value: '=$ask.text' } },
    ],
    edges: [{ from: 'q', to: 'ask' }, { from: 'ask', to: 'o' }],
  });
  const run = async (config: Record<string, unknown>): Promise<{ runId: string; events: Event[] }> => {
    const { deploymentId } = await publishDirect(stack.db, graph(config), { teamId });
    const res = await stack.app.inject({
      method: 'POST', url: `/api/released-app/${deploymentId}/run`, headers: { authorization: `Bearer ${runKey}` }, payload: { inputs: { q: 'hi' } },
    });
    const events = res.body.trim().split('\n').map((line) => JSON.parse(line) as Event);
    return { runId: events[0]!.runId as string, events };
  };
  const putProvider = (name: string, baseUrl: string, apiKey: string) => stack.app.inject({
    method: 'PUT', url: `/teams/${teamId}/llm-providers/${name}`, headers: { authorization: `Bearer ${ownerJwt}` }, payload: { baseUrl, apiKey },
  });
  const authorizations = (llm: FakeLlm) => llm.requests.map((r) => r.headers.authorization);

  beforeAll(async () => {
    envLlm = await startFakeLlm({ text: 'from env', apiKey: ENV_KEY });
    acmeLlm = await startFakeLlm({ text: 'from acme', apiKey: ACME_KEY });
    otherLlm = await startFakeLlm({ text: 'from other', apiKey: 'sk-other-provider-key-1111' });
    stack = await createTestStack({
      LLM_BASE_URL: envLlm.url, LLM_API_KEY: ENV_KEY, SECRETS_KEY: NEW.toString('base64'), SECRETS_KEY_PREVIOUS: OLD.toString('base64'),
    });
    await stack.startWorker();
    const make = credentialFactory(stack);
    const tenant = await make.fundedTenant(100_000);
    teamId = tenant.team.id;
    ownerId = tenant.owner.id;
    runKey = tenant.apiKey;
    ownerJwt = await make.jwt(ownerId);
    // Team provider URLs pass the SSRF guard; these loopback servers are allowed the way operators would.
    await allowHosts([acmeLlm, otherLlm]);
  });
  const allowHosts = async (servers: FakeLlm[]) => {
    await upsertSiteSetting(stack.db, 'http_block.allow_hosts', servers.map((llm) => new URL(llm.url).host));
    stack.deps.settings.invalidate('http_block.allow_hosts');
  };
  afterAll(async () => {
    await stack?.close();
    for (const llm of [envLlm, acmeLlm, otherLlm]) await llm?.close();
  });
  beforeEach(() => {
    for (const llm of [envLlm, acmeLlm, otherLlm]) llm.requests.length = 0;
  });

  it('a team without its own default: blocks without `provider` use LLM_BASE_URL and LLM_API_KEY', async () => {
    const { events } = await run({});
    expect(events.at(-1)).toMatchObject({ type: 'run_complete' });
    expect(events.find((e) => e.type === 'block_complete' && e.blockId === 'ask')!.output).toMatchObject({ text: 'from env' });
    expect(authorizations(envLlm)).toEqual([`Bearer ${ENV_KEY}`]);
  });

  it('a block naming provider `acme` uses the team\'s base URL and key', async () => {
    expect((await putProvider('acme', acmeLlm.url, ACME_KEY)).statusCode).toBe(200);
    const { events } = await run({ provider: 'acme' });
    expect(events.at(-1), JSON.stringify(events)).toMatchObject({ type: 'run_complete' });
    expect(events.find((e) => e.type === 'block_complete' && e.blockId === 'ask')!.output).toMatchObject({ text: 'from acme' });
    expect(authorizations(acmeLlm)).toEqual([`Bearer ${ACME_KEY}`]);
    expect(acmeLlm.requests[0]!.body).toMatchObject({ model: 'test-model' });
    expect(envLlm.requests).toHaveLength(0);
  });

  it('a PUT takes effect for the next run; a team `default` replaces the environment for blocks without `provider`', async () => {
    expect((await putProvider('acme', otherLlm.url, 'sk-other-provider-key-1111')).statusCode).toBe(200);
    const { events } = await run({ provider: 'acme' });
    expect(events.at(-1)).toMatchObject({ type: 'run_complete' });
    expect(authorizations(otherLlm)).toEqual(['Bearer sk-other-provider-key-1111']);
    expect(acmeLlm.requests).toHaveLength(0);

    expect((await putProvider('default', acmeLlm.url, ACME_KEY)).statusCode).toBe(200);
    expect((await run({})).events.at(-1)).toMatchObject({ type: 'run_complete' });
    expect((await run({ provider: 'default' })).events.at(-1)).toMatchObject({ type: 'run_complete' });
    expect(authorizations(acmeLlm)).toEqual([`Bearer ${ACME_KEY}`, `Bearer ${ACME_KEY}`]);
    expect(envLlm.requests).toHaveLength(0);

    await stack.app.inject({ method: 'DELETE', url: `/teams/${teamId}/llm-providers/default`, headers: { authorization: `Bearer ${ownerJwt}` } });
    expect((await run({})).events.at(-1)).toMatchObject({ type: 'run_complete' });
    expect(authorizations(envLlm)).toEqual([`Bearer ${ENV_KEY}`]);
  });

  it('a team provider URL goes through the SSRF guard: a loopback address that is not allowed fails the run and gets no request', async () => {
    await allowHosts([otherLlm]);
    try {
      expect((await putProvider('blocked', acmeLlm.url, ACME_KEY)).statusCode).toBe(200);
      const { events } = await run({ provider: 'blocked' });
      expect(events.find((e) => e.type === 'block_error')).toMatchObject({ blockId: 'ask', error: expect.stringContaining('LLM provider refused: Refused request to address 127.0.0.1') });
      expect(events.at(-1)).toMatchObject({ type: 'run_error' });
      expect(acmeLlm.requests).toHaveLength(0);
    } finally {
      await allowHosts([acmeLlm, otherLlm]);
    }
  });

  it('a named provider the team has not configured fails the run with that block error (and never falls back to env)', async () => {
    const { runId, events } = await run({ provider: 'nope' });
    expect(events.map((e) => e.type)).toEqual(['run_start', 'block_start', 'block_error', 'run_error']);
    expect(events[2]).toMatchObject({ blockId: 'ask', error: expect.stringContaining("LLM provider 'nope' is not configured for this team") });
    const row = await stack.db.selectFrom('runs').select(['status', 'error']).where('id', '=', runId).executeTakeFirstOrThrow();
    expect(row.status).toBe('failed');
    expect(envLlm.requests).toHaveLength(0);
  });

  it('the decrypted key appears nowhere: not in run_events, the runs row or the workflow history, even when the provider echoes it', async () => {
    expect((await putProvider('acme', acmeLlm.url, ACME_KEY)).statusCode).toBe(200);
    const ok = await run({ provider: 'acme' });
    // The fake server answers a wrong key with "Incorrect API key provided: <the key it got>".
    acmeLlm.configure({ text: 'from acme', apiKey: 'sk-something-else-entirely' });
    const rejected = await run({ provider: 'acme' });
    acmeLlm.configure({ text: 'from acme', apiKey: ACME_KEY });
    expect(ok.events.at(-1)).toMatchObject({ type: 'run_complete' });
    expect(rejected.events.at(-1)).toMatchObject({ type: 'run_error' });
    expect(JSON.stringify(rejected.events)).toMatch(/Incorrect API key provided/);

    for (const { runId, events } of [ok, rejected]) {
      expect(JSON.stringify(events)).not.toContain(ACME_KEY);
      const stored = await stack.db.selectFrom('run_events').selectAll().where('run_id', '=', runId).execute();
      expect(stored.length).toBeGreaterThan(0);
      expect(JSON.stringify(stored)).not.toContain(ACME_KEY);
      const runRow = await stack.db.selectFrom('runs').selectAll().where('id', '=', runId).executeTakeFirstOrThrow();
      expect(JSON.stringify(runRow)).not.toContain(ACME_KEY);
      const history = await stack.deps.temporal.client.workflow.getHandle(workflowIds.appRun(runId)).fetchHistory();
      // Payloads decoded (bytes, or base64 text in the JSON form), so the check reads what Temporal stored.
      const historyText = JSON.stringify(history, (key, v: unknown) => (
        v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : key === 'data' && typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : v));
      expect(historyText).toContain('acme');
      expect(historyText).not.toContain(ACME_KEY);
      expect(historyText).not.toContain(acmeLlm.url);
    }
  });

  it('key rotation: a row sealed with the previous key still works; a new PUT seals with the current key', async () => {
    // Written by the server before the rotation, when OLD was SECRETS_KEY.
    await putLlmProvider(stack.db, createKeyRing(OLD), ownerId, teamId, 'rotated', { baseUrl: acmeLlm.url, apiKey: ACME_KEY });
    const sealedBefore = (await stack.db.selectFrom('team_llm_providers').select('api_key_sealed').where('team_id', '=', teamId).where('name', '=', 'rotated').executeTakeFirstOrThrow()).api_key_sealed;
    expect(sealedBefore.split(':')[1]).toBe(keyIdOf(OLD));

    const { events } = await run({ provider: 'rotated' });
    expect(events.at(-1), JSON.stringify(events)).toMatchObject({ type: 'run_complete' });
    expect(authorizations(acmeLlm)).toEqual([`Bearer ${ACME_KEY}`]);

    // Re-saving re-seals with the current key.
    expect((await putProvider('rotated', acmeLlm.url, ACME_KEY)).statusCode).toBe(200);
    const sealedAfter = (await stack.db.selectFrom('team_llm_providers').select('api_key_sealed').where('team_id', '=', teamId).where('name', '=', 'rotated').executeTakeFirstOrThrow()).api_key_sealed;
    expect(sealedAfter.split(':')[1]).toBe(keyIdOf(NEW));

    // A worker whose ring lacks the sealing key fails the block for good, naming the key id but not the key.
    await putLlmProvider(stack.db, createKeyRing(OLD), ownerId, teamId, 'rotated', { baseUrl: acmeLlm.url, apiKey: ACME_KEY });
    const runId = (await stack.db.selectFrom('runs').select('id').where('team_id', '=', teamId).orderBy('created_at', 'desc').executeTakeFirstOrThrow()).id;
    const withoutPrevious = createLlmBlockActivities({ db: stack.db, config: {}, secrets: createKeyRing(NEW) });
    const error = await withoutPrevious.runLlmBlock({ runId, blockId: 'x', model: 'm', prompt: 'p', provider: 'rotated' }).then(
      () => { throw new Error('expected a failure'); }, (e: unknown) => e as ApplicationFailure,
    );
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect(error).toMatchObject({ nonRetryable: true, type: 'LlmProviderKeyUnreadable' });
    expect(error.message).toContain(keyIdOf(OLD));
    expect(error.message).not.toContain(ACME_KEY);
  });
});
