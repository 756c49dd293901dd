import { randomUUID } from 'node:crypto';
import { countTokens as o200kTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { chargeLlmTokens } from '../../shared/billing/llm-charges.js';
import { currentBillingRules, replaceBillingRules } from '../../shared/billing/billing-rules.js';
import { startFakeLlm, type FakeLlm } from '../app-runs/llm-server.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// The test's own price list (docs/billing.md), deliberately not imported from the code under test.
const START = 100_000;
const BASE = 10; // per run, charged when the run is created
const DEFAULT_PER_1K = 20; // llm tokens, models not listed in billing.rules

// llm blocks charged per token after they complete, end to end: API → workflow → activity → fake
// OpenAI-compatible server → credit_transactions, credit_balances and api_keys in PostgreSQL.
describe('per-token charges of llm blocks', () => {
  let stack: TestStack;
  let llm: FakeLlm;
  let make: ReturnType<typeof credentialFactory>;

  const oneLlm = (model = 'test-model'): Graph => ({
    blocks: [
      { id: 'q', type: 'input', name: 'q', config: { valueType: 'string', required: true } },
      { id: 'ask', type: 'llm', name: 'ask', config: { model, prompt: 'Say {{q}}' } },
      { id: 'o', type: 'output', name: 'o', config: { value: '=$ask.text' } },
    ],
    edges: [{ from: 'q', to: 'ask' }, { from: 'ask', to: 'o' }],
  });

  /** A team with START milli-credits and an API key; the run is paid through that key. */
  async function tenant() {
    const { team, apiKey } = await make.fundedTenant(START);
    const key = await stack.db.selectFrom('api_keys').select('id').where('team_id', '=', team.id).executeTakeFirstOrThrow();
    return { teamId: team.id, apiKey, apiKeyId: key.id };
  }

  /** Runs the app to its end (JSON mode answers once the run has finished) and returns the run id. */
  async function runApp(graph: Graph, who: { teamId: string; apiKey: string }): Promise<string> {
    const { deploymentId } = await publishDirect(stack.db, graph, { teamId: who.teamId });
    const res = await stack.app.inject({
      method: 'POST', url: `/api/released-app/${deploymentId}/run`, headers: { authorization: `Bearer ${who.apiKey}` },
      payload: { inputs: { q: 'hi' }, stream: false },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.headers['x-run-id'] as string;
  }

  const ledger = (teamId: string) => stack.db.selectFrom('credit_transactions').select(['amount_milli', 'reason', 'reference'])
    .where('team_id', '=', teamId).orderBy('amount_milli').execute(); // most negative first
  const tokenRows = async (teamId: string) => (await ledger(teamId)).filter((row) => row.reason === 'llm_tokens');
  const balance = async (teamId: string) =>
    (await stack.db.selectFrom('credit_balances').select('balance_milli').where('team_id', '=', teamId).executeTakeFirstOrThrow()).balance_milli;
  const keyUsage = async (apiKeyId: string) =>
    (await stack.db.selectFrom('api_keys').select('usage_credits').where('id', '=', apiKeyId).executeTakeFirstOrThrow()).usage_credits;
  const runStatus = async (runId: string) =>
    (await stack.db.selectFrom('runs').select('status').where('id', '=', runId).executeTakeFirstOrThrow()).status;
  const blockOutput = async (runId: string, blockId: string) => (await stack.db.selectFrom('run_events').select('payload')
    .where('run_id', '=', runId).where('event_key', '=', `${blockId}:block_complete`).executeTakeFirstOrThrow()).payload as { output: unknown };

  beforeAll(async () => {
    llm = await startFakeLlm();
    stack = await createTestStack({ LLM_BASE_URL: llm.url, LLM_API_KEY: 'sk-billing-test-key' });
    await stack.startWorker();
    make = credentialFactory(stack);
  });
  afterAll(async () => {
    await stack?.close();
    await llm?.close();
  });
  beforeEach(() => { llm.configure({}); llm.requests.length = 0; });

  it('usage reported by the provider: one llm_tokens row, and the balance and the API key move by base + token cost', async () => {
    const who = await tenant();
    llm.configure({ text: 'Hi!', usage: { prompt_tokens: 1200, completion_tokens: 1301, total_tokens: 2501 } });
    const runId = await runApp(oneLlm(), who);

    expect(await runStatus(runId)).toBe('completed');
    const tokenCost = 51; // 2501 tokens × 20 per 1k = 50.02, rounded up
    expect(await ledger(who.teamId)).toEqual([
      { amount_milli: -tokenCost, reason: 'llm_tokens', reference: `llm:${runId}:ask` },
      { amount_milli: -BASE, reason: 'run', reference: `run:${runId}` },
      { amount_milli: START, reason: 'operator_grant', reference: null },
    ]);
    expect(await balance(who.teamId)).toBe(START - BASE - tokenCost);
    expect(await keyUsage(who.apiKeyId)).toBe(BASE + tokenCost);
    // The block's output is what the provider said; the cost is not added to it.
    expect((await blockOutput(runId, 'ask')).output).toEqual({ text: 'Hi!', usage: { promptTokens: 1200, completionTokens: 1301, totalTokens: 2501 } });
  });

  it('a model listed in billing.rules is charged its own rate; other models the default', async () => {
    const who = await tenant();
    // Set as `cli settings set` does (rows of billing_rules), then dropped from the shared cache at
    // once rather than when the NOTIFY arrives (the worker reads the same one).
    await replaceBillingRules(stack.db, { llmModelPer1kTokensMilli: { 'priced-model': 300 } });
    stack.deps.settings.invalidate('billing.rules');
    try {
      expect((await currentBillingRules(stack.deps)).llmModelPer1kTokensMilli).toEqual({ 'priced-model': 300 });
      const graph: Graph = {
        blocks: [
          { id: 'q', type: 'input', name: 'q', config: { valueType: 'string', required: true } },
          { id: 'big', type: 'llm', name: 'big', config: { model: 'priced-model', prompt: 'Say {{q}}' } },
          { id: 'small', type: 'llm', name: 'small', config: { model: 'unlisted-model', prompt: 'Say {{q}}' } },
          { id: 'o', type: 'output', name: 'o', config: { value: '=$big.text & $small.text' } },
        ],
        edges: [{ from: 'q', to: 'big' }, { from: 'q', to: 'small' }, { from: 'big', to: 'o' }, { from: 'small', to: 'o' }],
      };
      llm.configure({ text: 'ok', usage: { prompt_tokens: 1000, completion_tokens: 1001, total_tokens: 2001 } });
      const runId = await runApp(graph, who);

      expect(await runStatus(runId)).toBe('completed');
      const bigCost = 601; // 2001 × 300 / 1000 = 600.3, rounded up
      const smallCost = 41; // 2001 × 20 / 1000 = 40.02, rounded up
      expect(await tokenRows(who.teamId)).toEqual([
        { amount_milli: -bigCost, reason: 'llm_tokens', reference: `llm:${runId}:big` },
        { amount_milli: -smallCost, reason: 'llm_tokens', reference: `llm:${runId}:small` },
      ]);
      expect(await balance(who.teamId)).toBe(START - BASE - bigCost - smallCost);
      expect(await keyUsage(who.apiKeyId)).toBe(BASE + bigCost + smallCost);
    } finally {
      await replaceBillingRules(stack.db, {});
      stack.deps.settings.invalidate('billing.rules');
    }
  });

  it('billing.rules.runBaseMilli is what a run costs when it is created', async () => {
    const who = await tenant();
    await replaceBillingRules(stack.db, { runBaseMilli: 37 });
    stack.deps.settings.invalidate('billing.rules');
    try {
      const graph: Graph = { blocks: [{ id: 'o', type: 'output', name: 'o', config: { value: 'plain' } }], edges: [] };
      const runId = await runApp(graph, who);
      expect((await ledger(who.teamId)).filter((row) => row.reason === 'run')).toEqual([{ amount_milli: -37, reason: 'run', reference: `run:${runId}` }]);
      expect(await balance(who.teamId)).toBe(START - 37);
      expect(await keyUsage(who.apiKeyId)).toBe(37);
    } finally {
      await replaceBillingRules(stack.db, {});
      stack.deps.settings.invalidate('billing.rules');
    }
  });

  it('a provider that reports no usage: the tokens are counted (o200k_base) and charged', async () => {
    const who = await tenant();
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(400);
    llm.configure({ text, chunkSize: 512, usage: null });
    const runId = await runApp(oneLlm(), who);

    expect(await runStatus(runId)).toBe('completed');
    // Counted here with the tokenizer directly: the rendered prompt ("Say hi") and the completion.
    const tokens = o200kTokens('Say hi') + o200kTokens(text);
    expect(tokens).toBeGreaterThan(3000);
    const tokenCost = Math.ceil((tokens * DEFAULT_PER_1K) / 1000);
    expect(await tokenRows(who.teamId)).toEqual([{ amount_milli: -tokenCost, reason: 'llm_tokens', reference: `llm:${runId}:ask` }]);
    expect(tokenCost).toBeGreaterThan(0);
    expect(await balance(who.teamId)).toBe(START - BASE - tokenCost);
    expect(await keyUsage(who.apiKeyId)).toBe(BASE + tokenCost);
    // The output still says the provider sent no usage.
    expect((await blockOutput(runId, 'ask')).output).toEqual({ text, usage: null });
  });

  it('chargeLlmTokens is idempotent per run and block (a retried activity), and a cost of 0 writes nothing', async () => {
    const who = await tenant();
    // A run row as recordRun writes it (its base charge is not part of this test).
    const { deploymentId, documentId } = await publishDirect(stack.db, oneLlm(), { teamId: who.teamId });
    const runId = randomUUID();
    await stack.db.insertInto('runs').values({
      id: runId, deployment_id: deploymentId, document_id: documentId, team_id: who.teamId, trigger_source: 'api-key',
      api_key_id: who.apiKeyId, inputs: JSON.stringify({}),
    }).execute();
    const usage = { promptTokens: 10, completionTokens: 20, totalTokens: 30 };
    const charge = { runId, blockId: 'ask', model: 'm', usage, costMilli: 7 };

    expect(await chargeLlmTokens(stack.db, charge)).toEqual({ charged: true });
    expect(await chargeLlmTokens(stack.db, charge)).toEqual({ charged: false });
    // Two retries racing each other: still one row.
    const raced = await Promise.all([chargeLlmTokens(stack.db, charge), chargeLlmTokens(stack.db, { ...charge, costMilli: 9 })]);
    expect(raced).toEqual([{ charged: false }, { charged: false }]);
    expect(await tokenRows(who.teamId)).toEqual([{ amount_milli: -7, reason: 'llm_tokens', reference: `llm:${runId}:ask` }]);
    expect(await balance(who.teamId)).toBe(START - 7);
    expect(await keyUsage(who.apiKeyId)).toBe(7);

    // Another block of the same run is its own charge; a free block leaves no row.
    expect(await chargeLlmTokens(stack.db, { ...charge, blockId: 'other', costMilli: 5 })).toEqual({ charged: true });
    expect(await chargeLlmTokens(stack.db, { ...charge, blockId: 'free', costMilli: 0 })).toEqual({ charged: false });
    expect((await tokenRows(who.teamId)).map((row) => row.reference).sort()).toEqual([`llm:${runId}:ask`, `llm:${runId}:other`]);
    expect(await balance(who.teamId)).toBe(START - 12);
    expect(await keyUsage(who.apiKeyId)).toBe(12);
  });

  it('post-paid: a charge larger than the balance takes it below zero, and the next run is refused with 402', async () => {
    const { team, apiKey } = await make.fundedTenant(BASE + 5);
    llm.configure({ text: 'expensive', usage: { prompt_tokens: 500, completion_tokens: 500, total_tokens: 1000 } });
    const runId = await runApp(oneLlm(), { teamId: team.id, apiKey });
    expect(await runStatus(runId)).toBe('completed');
    expect(await balance(team.id)).toBe(BASE + 5 - BASE - 20); // 1000 tokens × 20 per 1k
    expect(await balance(team.id)).toBeLessThan(0);

    const { deploymentId } = await publishDirect(stack.db, oneLlm(), { teamId: team.id });
    const refused = await stack.app.inject({
      method: 'POST', url: `/api/released-app/${deploymentId}/run`, headers: { authorization: `Bearer ${apiKey}` },
      payload: { inputs: { q: 'hi' }, stream: false },
    });
    expect(refused.statusCode).toBe(402);
    expect(await stack.db.selectFrom('runs').select('id').where('team_id', '=', team.id).execute()).toHaveLength(1);
  });

  it('a failing llm block charges no tokens: a 4xx at once, a 5xx after every retry', async () => {
    const who = await tenant();
    llm.configure({ status: 400, errorMessage: 'bad request' });
    const rejected = await runApp(oneLlm(), who);
    expect(await runStatus(rejected)).toBe('failed');

    llm.configure({ status: 500, errorMessage: 'model crashed' });
    const crashed = await runApp(oneLlm(), who);
    expect(await runStatus(crashed)).toBe('failed');
    expect(llm.requests).toHaveLength(1 + 5); // the 4xx once, the 5xx on each of the activity's 5 attempts (temporal/activity-options.ts)

    expect(await tokenRows(who.teamId)).toEqual([]);
    expect(await balance(who.teamId)).toBe(START - 2 * BASE);
    expect(await keyUsage(who.apiKeyId)).toBe(2 * BASE);
  }, 60_000);
});
