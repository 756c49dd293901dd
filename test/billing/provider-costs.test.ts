import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// GET /admin/billing-rules/provider-costs and …/facets (CONTRACTS.md "Backend routes beside it"):
// platform administrators page and filter the costs on the server; anyone else is refused.
describe('admin provider costs', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let adminAuth: Record<string, string>;

  const rows = [
    ['openai', 'gpt-4o', 2.5, 10], ['openai', 'gpt-4o-mini', 0.15, 0.6], ['openai', 'gpt-5', 1.25, 10],
    ['anthropic', 'claude-sonnet', 3, 15], ['anthropic', 'claude-haiku', 0.8, 4], ['mistral', 'gpt-4o', 1, 1],
  ] as const;

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
    await stack.db.insertInto('model_provider_costs').values(rows.map(([provider, model, input, output]) => ({
      provider, model, input_cost_per_mtok: input, output_cost_per_mtok: output,
    }))).execute();
    const admin = await make.user('platform-admin');
    await stack.db.updateTable('users').set({ is_platform_admin: true }).where('id', '=', admin.id).execute();
    adminAuth = { authorization: `Bearer ${await make.jwt(admin.id)}` };
  }, 60_000);
  afterAll(async () => { await stack?.close(); });

  const get = (url: string, headers = adminAuth) => stack.app.inject({ method: 'GET', url, headers });

  it('one page in provider, model order with the total of the filter; numbers as numbers', async () => {
    const all = await get('/admin/billing-rules/provider-costs');
    expect(all.statusCode, all.body).toBe(200);
    expect(all.json().total).toBe(6);
    expect(all.json().data.map((row: { provider: string; model: string }) => `${row.provider}/${row.model}`)).toEqual([
      'anthropic/claude-haiku', 'anthropic/claude-sonnet', 'mistral/gpt-4o', 'openai/gpt-4o', 'openai/gpt-4o-mini', 'openai/gpt-5',
    ]);
    expect(all.json().data[0]).toMatchObject({ provider: 'anthropic', model: 'claude-haiku', input_cost_per_mtok: 0.8, output_cost_per_mtok: 4, currency: 'USD' });
    expect(all.json().data[0].id).toMatch(/^[0-9a-f-]{36}$/);

    const page = await get('/admin/billing-rules/provider-costs?provider=openai&limit=2&offset=1');
    expect(page.json()).toMatchObject({ total: 3, data: [{ model: 'gpt-4o-mini' }, { model: 'gpt-5' }] });
    expect((await get('/admin/billing-rules/provider-costs?model=gpt-4o')).json().data.map((row: { provider: string }) => row.provider)).toEqual(['mistral', 'openai']);
    // Past the end: no rows, the total still says how many there are.
    expect((await get('/admin/billing-rules/provider-costs?provider=openai&offset=10')).json()).toEqual({ data: [], total: 3 });
    expect((await get('/admin/billing-rules/provider-costs?provider=nobody')).json()).toEqual({ data: [], total: 0 });
  });

  it('facets: each list with its counts, narrowed by the other filter only', async () => {
    const all = await get('/admin/billing-rules/provider-costs/facets');
    expect(all.statusCode, all.body).toBe(200);
    expect(all.json()).toEqual({
      providers: [{ value: 'openai', count: 3 }, { value: 'anthropic', count: 2 }, { value: 'mistral', count: 1 }],
      models: [
        { value: 'gpt-4o', count: 2 }, { value: 'claude-haiku', count: 1 }, { value: 'claude-sonnet', count: 1 },
        { value: 'gpt-4o-mini', count: 1 }, { value: 'gpt-5', count: 1 },
      ],
    });
    const picked = await get('/admin/billing-rules/provider-costs/facets?provider=anthropic');
    expect(picked.json().providers).toEqual(all.json().providers);
    expect(picked.json().models).toEqual([{ value: 'claude-haiku', count: 1 }, { value: 'claude-sonnet', count: 1 }]);
  });

  it('refusals: a signed-in non-administrator 403, an API key 403, no credential 401, bad paging 400', async () => {
    const user = await make.user('not-admin');
    const team = await make.team(user.id);
    const userAuth = { authorization: `Bearer ${await make.jwt(user.id)}` };
    for (const url of ['/admin/billing-rules/provider-costs', '/admin/billing-rules/provider-costs/facets']) {
      const refused = await get(url, userAuth);
      expect(refused.statusCode, url).toBe(403);
      expect(refused.json().message).toBe('Only platform administrators can read the model provider costs');
      expect((await get(url, {})).statusCode).toBe(401);
      const key = await make.apiKey(team.id, user.id);
      expect((await get(url, { authorization: `Bearer ${key.token}` })).statusCode).toBe(403);
    }
    for (const query of ['limit=0', 'limit=201', 'offset=-1', 'limit=abc', 'provider=']) {
      expect((await get(`/admin/billing-rules/provider-costs?${query}`)).statusCode, query).toBe(400);
    }
    expect(await stack.db.selectFrom('model_provider_costs').select('id').execute()).toHaveLength(rows.length);
  });
});
