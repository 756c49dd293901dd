import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { anonKeysOf } from '../../shared/data-api/identity.js';
import type { Graph } from '../../shared/documents/graph-schema.js';
import { addTeamMember } from '../../shared/identity/service.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// One test per row of the contract's relation table (CONTRACTS.md "Frontend data access"), with the
// real supabase-js client against the API as the harness boots it: reads (and the writes the row
// allows) as a member and an admin of team A, a platform administrator, an outsider (the owner of
// team B) and the anon key alone; then the policies' bad inputs through the same client. Every
// refusal reads the database back over the service's connection to show nothing changed.

const graph = { blocks: [{ id: 'o', type: 'output', name: 'out', config: { value: 'x' } }], edges: [] } as unknown as Graph;

type Row = Record<string, unknown>;
interface Tenant {
  team: string; project: string; document: string; deployment: string; run: string; file: string; key: string;
  subscription: string; transaction: string; order: string; schedule: string; session: string; audit: string;
  owner: string; member: string; agentUser: string; binding: string; message: string;
}

let stack: TestStack;
let origin: string;
let anonKey: string;
let a: Tenant;
let b: Tenant;
let platform: string;
const jwts = new Map<string, string>();

/** supabase-js as the frontend makes it: the anon key, and the user's JWT when `userId` is given. */
const as = (userId: string | null): SupabaseClient =>
  createClient(origin, anonKey, { ...(userId ? { accessToken: async () => jwts.get(userId)! } : {}), realtime: { transport: WebSocket as never } });
const anon = () => as(null);

/** The service's own connection (it owns the tables: no policy applies). */
let pool: pg.Pool;
const service = async (text: string, values: unknown[] = []): Promise<Row[]> => (await pool.query(text, values)).rows as Row[];

/** A refusal as supabase-js reports it. */
const refused = (status: number, code: string, message: unknown) => ({ status, error: expect.objectContaining({ code, message }) });
/** No privilege on the relation or column (the anon key: 401, a user: 403). */
const deniedOn = (relation: string, status = 403) => refused(status, '42501', `permission denied for ${['payment_orders', 'project_schedules', 'grants'].includes(relation) ? 'view' : 'table'} ${relation}`);
/** A row the policies do not let this caller write. */
const policyRefuses = (relation: string) => refused(403, '42501', `new row violates row-level security policy for table "${relation}"`);
const outcome = async (query: PromiseLike<{ status: number; error: unknown; data: unknown }>) => {
  const { status, error, data } = await query;
  return { status, error, data };
};

async function tenant(label: string): Promise<Tenant> {
  const make = credentialFactory(stack);
  const owner = (await make.user(`${label}-owner`)).id;
  const member = (await make.user(`${label}-member`)).id;
  const team = (await make.team(owner, `Team ${label}`)).id;
  await addTeamMember(stack.db, { teamId: team, userId: member, role: 'member' });
  const app = await publishDirect(stack.db, graph, { teamId: team, publishedBy: owner });
  const project = (await service('SELECT project_id FROM documents WHERE id = $1', [app.documentId]))[0]!.project_id as string;
  const key = (await make.apiKey(team, owner)).id;
  const agent = await make.agentToken(team, member, []);
  const one = async (text: string, values: unknown[]) => (await service(text, values))[0]!.id as string;
  const price = await one(`INSERT INTO billing_prices (id, product_type, product_code, name, amount, currency, credits)
    VALUES (gen_random_uuid(), 'credits', $1, 'Pack', 100, 'USD', 1000) RETURNING id`, [`pack-${randomUUID().slice(0, 8)}`]);
  return {
    team, project, document: app.documentId, deployment: app.deploymentId, key, owner, member,
    agentUser: agent.agentUserId, binding: agent.bindingId,
    run: await one(`INSERT INTO runs (id, deployment_id, document_id, team_id, trigger_source, inputs, status, created_at)
      VALUES (gen_random_uuid(), $1, $2, $3, 'api', '{}', 'completed', now()) RETURNING id`, [app.deploymentId, app.documentId, team]),
    file: await one(`INSERT INTO files (id, project_id, team_id, uploaded_by, size, content_type, sha256, storage_key)
      VALUES (gen_random_uuid(), $1, $2, $3, 3, 'text/plain', repeat('ab', 32), $4) RETURNING id`, [project, team, owner, `k/${randomUUID()}`]),
    subscription: await one(`INSERT INTO subscriptions (team_id, plan_code) VALUES ($1, 'pro') RETURNING id`, [team]),
    transaction: await one(`INSERT INTO credit_transactions (id, team_id, amount_milli, reason, created_at) VALUES (gen_random_uuid(), $1, -300, 'run', now()) RETURNING id`, [team]),
    order: await one(`INSERT INTO billing_orders (id, team_id, user_id, price_id, provider, provider_order_id, amount, currency, credits, product_type, billing_period, pay_url)
      VALUES (gen_random_uuid(), $1, $2, $3, 'mock', $4, 100, 'USD', 1000, 'credits', 'one_time', 'https://pay.example/secret') RETURNING id`, [team, owner, price, `o-${randomUUID()}`]),
    schedule: await one(`INSERT INTO schedules (id, project_id, team_id, name, cron_expression, timeout_ms) VALUES (gen_random_uuid(), $1, $2, 'nightly', '0 3 * * *', 60000) RETURNING id`, [project, team]),
    session: await one(`INSERT INTO assets_sessions (team_id, project_id, created_by) VALUES ($1, $2, $3) RETURNING id`, [team, project, member]),
    audit: await one(`INSERT INTO audit_logs (team_id, actor_id, action, target_type, target_id) VALUES ($1, $2, 'key.created', 'api_key', $3) RETURNING id`, [team, owner, key]),
    message: await one(`INSERT INTO romp_messages (binding_id, sender_user_id, body) VALUES ($1, $2, 'hello') RETURNING id`, [agent.bindingId, member]),
  };
}

beforeAll(async () => {
  stack = await createTestStack();
  pool = new pg.Pool({ connectionString: stack.databaseUrl, max: 2 });
  a = await tenant('a');
  b = await tenant('b');
  const make = credentialFactory(stack);
  platform = (await make.user('platform')).id;
  await service('UPDATE users SET is_platform_admin = true WHERE id = $1', [platform]);
  await make.oauthToken(a.member, ['profile']);
  await make.oauthToken(b.owner, ['profile']);
  for (const user of [a.owner, a.member, a.agentUser, b.owner, b.member, b.agentUser, platform]) jwts.set(user, await make.jwt(user));
  await stack.app.listen({ port: 0, host: '127.0.0.1' });
  origin = `http://127.0.0.1:${(stack.app.server.address() as AddressInfo).port}`;
  anonKey = anonKeysOf(stack.deps.secrets).current!;
}, 60_000);

afterAll(async () => {
  await pool?.end();
  await stack?.close();
});

/** Reads `relation` filtered to `column = value` as each actor and returns the ids each one got. */
async function readers(relation: string, column: string, value: string, select = column) {
  const read = async (userId: string | null) => {
    const { data, error } = await as(userId).from(relation).select(select).eq(column, value);
    expect(error, `${relation} as ${userId ?? 'anon'}`).toBeNull();
    return (data as unknown as Row[]).length;
  };
  return { member: await read(a.member), admin: await read(a.owner), platform: await read(platform), outsider: await read(b.owner), anon: await read(null) };
}
const membersOnly = { member: 1, admin: 1, platform: 0, outsider: 0, anon: 0 };

describe('the contract\'s relations through supabase-js', () => {
  it('subscriptions: members read their team\'s; nobody writes', async () => {
    expect(await readers('subscriptions', 'id', a.subscription)).toEqual(membersOnly);
    const { data } = await as(a.member).from('subscriptions').select('id, team_id, plan_code, status, current_period_start, current_period_end, cancel_at_period_end').single();
    expect(data).toMatchObject({ id: a.subscription, team_id: a.team, plan_code: 'pro', status: 'active', cancel_at_period_end: false });
    expect(await outcome(as(a.owner).from('subscriptions').update({ status: 'canceled' }).eq('id', a.subscription))).toMatchObject(deniedOn('subscriptions'));
    expect(await service('SELECT status FROM subscriptions WHERE id = $1', [a.subscription])).toEqual([{ status: 'active' }]);
  });

  it('credit_balances: members read; admins update the auto top-up columns only', async () => {
    expect(await readers('credit_balances', 'team_id', a.team)).toEqual(membersOnly);
    const updated = await as(a.owner).from('credit_balances')
      .update({ auto_topup_enabled: true, auto_topup_threshold_milli: 1000, auto_topup_amount_milli: 20000 }).eq('team_id', a.team).select('team_id, auto_topup_enabled, auto_topup_threshold_milli, auto_topup_amount_milli');
    expect(updated.error).toBeNull();
    expect(updated.data).toEqual([{ team_id: a.team, auto_topup_enabled: true, auto_topup_threshold_milli: 1000, auto_topup_amount_milli: 20000 }]);
    const { data } = await as(a.member).from('credit_balances').select('team_id, balance_milli, auto_topup_enabled').single();
    expect(data).toEqual({ team_id: a.team, balance_milli: 0, auto_topup_enabled: true });
  });

  it('credit_transactions: members read; nobody writes', async () => {
    expect(await readers('credit_transactions', 'id', a.transaction)).toEqual(membersOnly);
    const { data } = await as(a.member).from('credit_transactions').select('id, team_id, amount_milli, reason, created_at').eq('id', a.transaction).single();
    expect(data).toMatchObject({ id: a.transaction, team_id: a.team, amount_milli: -300, reason: 'run' });
    const before = await service('SELECT count(*)::int AS n FROM credit_transactions');
    expect(await outcome(as(a.owner).from('credit_transactions').insert({ team_id: a.team, amount_milli: 1000000, reason: 'gift' }))).toMatchObject(deniedOn('credit_transactions'));
    expect(await service('SELECT count(*)::int AS n FROM credit_transactions')).toEqual(before);
  });

  it('billing_rules: signed-in users read; platform admins insert and update (soft delete)', async () => {
    await service('UPDATE billing_rules SET deleted_at = now() WHERE deleted_at IS NULL');
    const inserted = await as(platform).from('billing_rules').insert({ rule_key: 'runBaseMilli', value: 2 }).select('id, rule_key, value').single();
    expect(inserted.error).toBeNull();
    const id = (inserted.data as Row).id as string;
    expect(await readers('billing_rules', 'id', id)).toEqual({ member: 1, admin: 1, platform: 1, outsider: 1, anon: 0 });
    // The engine checks the value as the billing module does, so the update names the rule's key.
    const changed = await as(platform).from('billing_rules').update({ value: 3 }).eq('id', id).eq('rule_key', 'runBaseMilli').select('value').single();
    expect([changed.error, changed.data]).toEqual([null, { value: 3 }]);
    const softDeleted = await as(platform).from('billing_rules').update({ deleted_at: new Date().toISOString() }).eq('id', id).select('deleted_at').single();
    expect(softDeleted.error).toBeNull();
    expect((softDeleted.data as Row).deleted_at).not.toBeNull();
  });

  it('model_provider_costs: platform admins read, upsert on (provider, model) and delete; nobody else sees a row', async () => {
    const model = `gpt-${randomUUID().slice(0, 8)}`;
    const row = { provider: 'openai', model, input_cost_per_mtok: 2.5, output_cost_per_mtok: 10, currency: 'USD' };
    const first = await as(platform).from('model_provider_costs').upsert(row, { onConflict: 'provider,model' }).select('id').single();
    expect(first.error).toBeNull();
    const again = await as(platform).from('model_provider_costs').upsert({ ...row, output_cost_per_mtok: 12 }, { onConflict: 'provider,model' }).select('id, output_cost_per_mtok').single();
    expect(again.data).toEqual({ id: (first.data as Row).id, output_cost_per_mtok: 12 });
    expect(await readers('model_provider_costs', 'model', model)).toEqual({ member: 0, admin: 0, platform: 1, outsider: 0, anon: 0 });
    const removed = await as(platform).from('model_provider_costs').delete().eq('model', model).select('model');
    expect(removed.data).toEqual([{ model }]);
  });

  it('grants: each user reads the OAuth grants they gave', async () => {
    const own = await as(a.member).from('grants').select('id, user_id, app_id, scopes, created_at, revoked_at');
    expect(own.error).toBeNull();
    expect(own.data).toEqual([expect.objectContaining({ user_id: a.member, scopes: ['profile'], revoked_at: null })]);
    expect(await readers('grants', 'user_id', a.member)).toEqual({ member: 1, admin: 0, platform: 0, outsider: 0, anon: 0 });
  });

  it('audit_logs: members insert as themselves; nobody reads it directly', async () => {
    const target = randomUUID();
    const inserted = await as(a.member).from('audit_logs').insert({ team_id: a.team, action: 'document.opened', target_type: 'document', target_id: target, metadata: { from: 'editor' } });
    expect(inserted.error).toBeNull();
    expect(inserted.status).toBe(201);
    expect(await service('SELECT actor_id, metadata FROM audit_logs WHERE target_id = $1', [target])).toEqual([{ actor_id: a.member, metadata: { from: 'editor' } }]);
    expect(await outcome(as(a.owner).from('audit_logs').select('id'))).toMatchObject(deniedOn('audit_logs'));
    expect(await outcome(anon().from('audit_logs').select('id'))).toMatchObject(deniedOn('audit_logs', 401));
  });

  it('audit_logs_with_names: the team\'s admins read its audit trail with the actor\'s name and email', async () => {
    const [owner] = await service('SELECT name, email FROM users WHERE id = $1', [a.owner]);
    const { data, error } = await as(a.owner).from('audit_logs_with_names').select('id, actor_id, action, actor_name, actor_email').eq('id', a.audit).single();
    expect(error).toBeNull();
    expect(data).toEqual({ id: a.audit, actor_id: a.owner, action: 'key.created', actor_name: owner!.name, actor_email: owner!.email });
    expect(await readers('audit_logs_with_names', 'id', a.audit)).toEqual({ member: 0, admin: 1, platform: 0, outsider: 0, anon: 0 });
  });

  it('api_keys: members read (never key_hash); admins update name, description, limit_credits', async () => {
    expect(await readers('api_keys', 'id', a.key)).toEqual(membersOnly);
    const all = await as(a.member).from('api_keys').select('*').eq('id', a.key).single();
    expect(all.error).toBeNull();
    expect(Object.keys(all.data as Row).sort()).toEqual(['created_at', 'created_by', 'deleted_at', 'description', 'expires_at', 'id', 'last_used_at', 'limit_credits', 'name', 'team_id', 'usage_credits']);
    const renamed = await as(a.owner).from('api_keys').update({ name: 'CI key', description: 'for CI', limit_credits: 5000 }).eq('id', a.key).select('name, description, limit_credits').single();
    expect(renamed.data).toEqual({ name: 'CI key', description: 'for CI', limit_credits: 5000 });
  });

  it('site_settings: platform admins read, upsert and delete; a value the service would refuse is refused', async () => {
    const upserted = await as(platform).from('site_settings').upsert({ key: 'run.max_timeout_seconds', value: 120 }).select('key, value').single();
    expect(upserted.error).toBeNull();
    expect(upserted.data).toEqual({ key: 'run.max_timeout_seconds', value: 120 });
    expect(await readers('site_settings', 'key', 'run.max_timeout_seconds')).toEqual({ member: 0, admin: 0, platform: 1, outsider: 0, anon: 0 });
    expect(await outcome(as(platform).from('site_settings').upsert({ key: 'run.max_timeout_seconds', value: -5 }))).toMatchObject(refused(400, '23514', expect.stringContaining('run.max_timeout_seconds')));
    expect(await service(`SELECT value FROM site_settings WHERE key = 'run.max_timeout_seconds'`)).toEqual([{ value: 120 }]);
    const removed = await as(platform).from('site_settings').delete().eq('key', 'run.max_timeout_seconds').select('key');
    expect(removed.data).toEqual([{ key: 'run.max_timeout_seconds' }]);
  });

  it.each([
    ['documents', 'document'], ['deployments', 'deployment'], ['projects', 'project'], ['files', 'file'],
  ] as const)('%s: members read their team\'s rows; nobody writes', async (relation, id) => {
    expect(await readers(relation, 'id', a[id])).toEqual(membersOnly);
    expect(await outcome(as(a.owner).from(relation).update({ deleted_at: new Date().toISOString() }).eq('id', a[id]))).toMatchObject(deniedOn(relation));
    expect(await service(`SELECT deleted_at FROM ${relation} WHERE id = $1`, [a[id]])).toEqual([{ deleted_at: null }]);
  });

  it('team_members: members read their team\'s members; nobody writes', async () => {
    expect(await readers('team_members', 'user_id', a.member)).toEqual(membersOnly);
    const { data } = await as(a.member).from('team_members').select('user_id, role').order('role');
    expect(data).toEqual([{ user_id: a.member, role: 'member' }, { user_id: a.owner, role: 'owner' }]);
    expect(await outcome(as(b.owner).from('team_members').insert({ team_id: a.team, user_id: b.owner, role: 'owner' }))).toMatchObject(deniedOn('team_members'));
    expect(await service('SELECT count(*)::int AS n FROM team_members WHERE team_id = $1', [a.team])).toEqual([{ n: 2 }]);
  });

  it('runs: members read their team\'s runs with the project they belong to', async () => {
    expect(await readers('runs', 'id', a.run)).toEqual(membersOnly);
    const { data } = await as(a.member).from('runs').select('id, deployment_id, document_id, project_id, team_id, status, trigger_source, created_at, finished_at').eq('project_id', a.project);
    expect(data).toEqual([expect.objectContaining({ id: a.run, deployment_id: a.deployment, document_id: a.document, project_id: a.project, team_id: a.team, status: 'completed' })]);
  });

  it('payment_orders: members read their team\'s billing orders, without the payment channel\'s internals', async () => {
    expect(await readers('payment_orders', 'id', a.order)).toEqual(membersOnly);
    const { data } = await as(a.member).from('payment_orders').select('*').eq('id', a.order).single();
    expect(data).toMatchObject({ id: a.order, team_id: a.team, status: 'pending', amount: 100, currency: 'USD', credits: 1000 });
    expect(data).not.toHaveProperty('pay_url');
  });

  it('project_schedules: members read their team\'s schedules', async () => {
    expect(await readers('project_schedules', 'id', a.schedule)).toEqual(membersOnly);
    const { data } = await as(a.member).from('project_schedules').select('id, project_id, team_id, name, cron_expression, timezone, enabled').eq('id', a.schedule).single();
    expect(data).toEqual({ id: a.schedule, project_id: a.project, team_id: a.team, name: 'nightly', cron_expression: '0 3 * * *', timezone: 'UTC', enabled: true });
  });

  it('romp_messages: both parties read; the agent posts when can_send, the owner when can_receive', async () => {
    const read = async (userId: string | null) => ((await as(userId).from('romp_messages').select('id').eq('id', a.message)).data ?? []).length;
    expect([await read(a.member), await read(a.agentUser), await read(a.owner), await read(platform), await read(b.owner), await read(null)]).toEqual([1, 1, 0, 0, 0, 0]);
    const fromAgent = await as(a.agentUser).from('romp_messages').insert({ binding_id: a.binding, body: 'done' }).select('sender_user_id, body').single();
    expect(fromAgent.data).toEqual({ sender_user_id: a.agentUser, body: 'done' });
    const fromOwner = await as(a.member).from('romp_messages').insert({ binding_id: a.binding, sender_user_id: a.member, body: 'thanks' }).select('sender_user_id').single();
    expect(fromOwner.data).toEqual({ sender_user_id: a.member });
  });

  it('assets_sessions and assets_items: members insert and update in their team', async () => {
    const session = await as(a.member).from('assets_sessions').insert({ team_id: a.team, project_id: a.project }).select('id, status, created_by').single();
    expect(session.error).toBeNull();
    expect(session.data).toMatchObject({ status: 'active', created_by: a.member });
    const sessionId = (session.data as Row).id as string;
    const item = await as(a.member).from('assets_items').insert({ session_id: sessionId, file_id: a.file }).select('id, session_id, team_id, project_id, file_id, status').single();
    expect(item.data).toMatchObject({ session_id: sessionId, team_id: a.team, project_id: a.project, file_id: a.file, status: 'pending' });
    const itemId = (item.data as Row).id as string;
    expect((await as(a.agentUser).from('assets_items').update({ status: 'ready' }).eq('id', itemId).select('status').single()).data).toEqual({ status: 'ready' });
    expect((await as(a.owner).from('assets_sessions').update({ status: 'completed' }).eq('id', sessionId).select('status').single()).data).toEqual({ status: 'completed' });
    expect(await readers('assets_sessions', 'id', sessionId)).toEqual(membersOnly);
    expect(await readers('assets_items', 'id', itemId)).toEqual(membersOnly);
  });

  it('get_usage_heatmap: members get runs and credits per UTC day; others 42501', async () => {
    const today = new Date().toISOString().slice(0, 10);
    const { data, error } = await as(a.member).rpc('get_usage_heatmap', { p_team_id: a.team });
    expect(error).toBeNull();
    expect(data).toEqual([{ day: today, runs: 1, credits_milli: 300 }]);
    expect((await as(a.agentUser).rpc('get_usage_heatmap', { p_team_id: a.team, p_days: 7 })).data).toEqual([{ day: today, runs: 1, credits_milli: 300 }]);
    expect(await outcome(as(b.owner).rpc('get_usage_heatmap', { p_team_id: a.team }))).toMatchObject(refused(403, '42501', `permission denied for team ${a.team}`));
    expect(await outcome(anon().rpc('get_usage_heatmap', { p_team_id: a.team }))).toMatchObject(refused(401, '42501', `permission denied for team ${a.team}`));
  });

  it('delete_api_key: an admin soft-deletes a key of the team, which stops working at the HTTP API at once', async () => {
    const { id, token } = await credentialFactory(stack).apiKey(a.team, a.owner);
    const projects = () => fetch(`${origin}/teams/${a.team}/projects`, { headers: { authorization: `Bearer ${token}` } });
    expect((await projects()).status).toBe(200);
    const { error } = await as(a.owner).rpc('delete_api_key', { p_key_id: id });
    expect(error).toBeNull();
    expect((await service('SELECT deleted_at FROM api_keys WHERE id = $1', [id]))[0]!.deleted_at).not.toBeNull();
    expect((await projects()).status).toBe(401);
  });
});

describe('bad inputs through supabase-js: each refused, nothing changes', () => {
  const memberOnlyRelations = ['subscriptions', 'credit_balances', 'credit_transactions', 'api_keys', 'documents', 'deployments', 'projects', 'files',
    'team_members', 'runs', 'payment_orders', 'project_schedules', 'assets_sessions', 'assets_items', 'romp_messages', 'grants', 'audit_logs_with_names',
    'model_provider_costs', 'site_settings', 'billing_rules'];

  it('the anon key alone reads 0 rows of every member-only relation', async () => {
    for (const relation of memberOnlyRelations) {
      const { data, error, status } = await anon().from(relation).select('*', { count: 'exact' });
      expect(error, relation).toBeNull();
      expect([status, data], relation).toEqual([200, []]);
    }
  });

  it('a member of team A reads none of team B\'s rows, whatever the filter', async () => {
    const db = as(a.member);
    const bIds: Array<[string, string, string]> = [
      ['subscriptions', 'id', b.subscription], ['credit_balances', 'team_id', b.team], ['credit_transactions', 'id', b.transaction], ['api_keys', 'id', b.key],
      ['documents', 'id', b.document], ['deployments', 'id', b.deployment], ['projects', 'id', b.project], ['files', 'id', b.file],
      ['team_members', 'team_id', b.team], ['runs', 'id', b.run], ['payment_orders', 'id', b.order], ['project_schedules', 'id', b.schedule],
      ['assets_sessions', 'id', b.session], ['romp_messages', 'id', b.message],
    ];
    for (const [relation, column, value] of bIds) {
      const direct = await db.from(relation).select(column).eq(column, value);
      expect([direct.error, direct.data], relation).toEqual([null, []]);
      const widened = await db.from(relation).select(column).or(`${column}.eq.${value},${column}.neq.${value}`);
      expect(widened.error, relation).toBeNull();
      expect((widened.data as unknown as Row[]).map((r) => r[column]), relation).not.toContain(value);
    }
  });

  it('a member updating another team\'s rows changes nothing', async () => {
    const before = await service('SELECT auto_topup_enabled, auto_topup_threshold_milli FROM credit_balances WHERE team_id = $1', [b.team]);
    const balance = await as(a.owner).from('credit_balances').update({ auto_topup_enabled: true, auto_topup_threshold_milli: 1 }).eq('team_id', b.team).select('team_id');
    expect([balance.error, balance.data]).toEqual([null, []]);
    expect(await service('SELECT auto_topup_enabled, auto_topup_threshold_milli FROM credit_balances WHERE team_id = $1', [b.team])).toEqual(before);
    const key = await as(a.owner).from('api_keys').update({ name: 'stolen' }).eq('id', b.key).select('id');
    expect([key.error, key.data]).toEqual([null, []]);
    const session = await as(a.member).from('assets_sessions').update({ status: 'hijacked' }).eq('id', b.session).select('id');
    expect([session.error, session.data]).toEqual([null, []]);
    expect(await service('SELECT (SELECT name FROM api_keys WHERE id = $1) AS k, (SELECT status FROM assets_sessions WHERE id = $2) AS s', [b.key, b.session]))
      .toEqual([{ k: 'test key', s: 'active' }]);
  });

  it('a member who is not an admin changes nothing on credit_balances or api_keys', async () => {
    const state = () => service('SELECT (SELECT auto_topup_threshold_milli FROM credit_balances WHERE team_id = $1) AS t, (SELECT limit_credits FROM api_keys WHERE id = $2) AS l', [a.team, a.key]);
    const before = await state();
    const balance = await as(a.member).from('credit_balances').update({ auto_topup_threshold_milli: 7 }).eq('team_id', a.team).select('team_id');
    expect([balance.error, balance.data]).toEqual([null, []]);
    const key = await as(a.member).from('api_keys').update({ limit_credits: 1 }).eq('id', a.key).select('id');
    expect([key.error, key.data]).toEqual([null, []]);
    expect(await state()).toEqual(before);
  });

  it('columns outside the grant are refused: balance_milli, key_hash, usage_credits', async () => {
    const before = await service('SELECT (SELECT balance_milli FROM credit_balances WHERE team_id = $1) AS b, (SELECT usage_credits FROM api_keys WHERE id = $2) AS u, (SELECT key_hash FROM api_keys WHERE id = $2) AS h', [a.team, a.key]);
    expect(await outcome(as(a.owner).from('credit_balances').update({ balance_milli: 999999999 }).eq('team_id', a.team))).toMatchObject(deniedOn('credit_balances'));
    expect(await outcome(as(a.owner).from('api_keys').update({ usage_credits: 0 }).eq('id', a.key))).toMatchObject(deniedOn('api_keys'));
    expect(await outcome(as(a.owner).from('api_keys').update({ key_hash: 'x' }).eq('id', a.key))).toMatchObject(deniedOn('api_keys'));
    expect(await outcome(as(a.owner).from('api_keys').select('key_hash').eq('id', a.key))).toMatchObject(deniedOn('api_keys'));
    expect(await outcome(as(a.owner).from('api_keys').insert({ team_id: a.team, created_by: a.owner, name: 'mine' }))).toMatchObject(deniedOn('api_keys'));
    expect(await service('SELECT (SELECT balance_milli FROM credit_balances WHERE team_id = $1) AS b, (SELECT usage_credits FROM api_keys WHERE id = $2) AS u, (SELECT key_hash FROM api_keys WHERE id = $2) AS h', [a.team, a.key])).toEqual(before);
  });

  it('inserting an audit row as someone else, or into another team, is refused', async () => {
    const before = await service('SELECT count(*)::int AS n FROM audit_logs');
    expect(await outcome(as(a.member).from('audit_logs').insert({ team_id: a.team, actor_id: a.owner, action: 'forged' }))).toMatchObject(policyRefuses('audit_logs'));
    expect(await outcome(as(a.member).from('audit_logs').insert({ team_id: b.team, action: 'intrude' }))).toMatchObject(policyRefuses('audit_logs'));
    expect(await outcome(anon().from('audit_logs').insert({ team_id: a.team, actor_id: a.owner, action: 'anon' }))).toMatchObject(deniedOn('audit_logs', 401));
    expect(await service('SELECT count(*)::int AS n FROM audit_logs')).toEqual(before);
  });

  it('an audit row whose metadata is not a JSON object, or whose target_id is not a uuid, is refused', async () => {
    const before = await service('SELECT count(*)::int AS n FROM audit_logs');
    expect(await outcome(as(a.member).from('audit_logs').insert({ team_id: a.team, action: 'x', metadata: ['not', 'an', 'object'] })))
      .toMatchObject(refused(400, '23514', 'new row for relation "audit_logs" violates check constraint "audit_logs_metadata_check"'));
    expect(await outcome(as(a.member).from('audit_logs').insert({ team_id: a.team, action: 'x', target_id: 'doc-1' })))
      .toMatchObject(refused(400, '22P02', 'invalid input syntax for type uuid: "doc-1"'));
    expect(await service('SELECT count(*)::int AS n FROM audit_logs')).toEqual(before);
  });

  it('DELETE on billing_rules is refused, even to a platform admin; others cannot insert', async () => {
    const before = await service('SELECT id, value, deleted_at FROM billing_rules ORDER BY id');
    expect(await outcome(as(platform).from('billing_rules').delete().eq('rule_key', 'runBaseMilli'))).toMatchObject(deniedOn('billing_rules'));
    expect(await outcome(as(a.owner).from('billing_rules').insert({ rule_key: 'llmPer1kTokensMilli', value: 0 }))).toMatchObject(policyRefuses('billing_rules'));
    expect(await service('SELECT id, value, deleted_at FROM billing_rules ORDER BY id')).toEqual(before);
  });

  it('model_provider_costs and site_settings refuse everyone but platform admins', async () => {
    const before = await service('SELECT (SELECT count(*) FROM model_provider_costs) AS c, (SELECT count(*) FROM site_settings) AS s');
    expect(await outcome(as(a.owner).from('model_provider_costs').upsert({ provider: 'x', model: 'y', input_cost_per_mtok: 0, output_cost_per_mtok: 0 }, { onConflict: 'provider,model' })))
      .toMatchObject(policyRefuses('model_provider_costs'));
    expect(await outcome(as(a.owner).from('site_settings').upsert({ key: 'run.max_timeout_seconds', value: 1 }))).toMatchObject(policyRefuses('site_settings'));
    expect(await service('SELECT (SELECT count(*) FROM model_provider_costs) AS c, (SELECT count(*) FROM site_settings) AS s')).toEqual(before);
  });

  it('romp_messages: a switch off, another sender, or a stranger to the binding is refused', async () => {
    const before = await service('SELECT count(*)::int AS n FROM romp_messages');
    await service('UPDATE agent_bindings SET can_send = false WHERE id = $1', [a.binding]);
    expect(await outcome(as(a.agentUser).from('romp_messages').insert({ binding_id: a.binding, body: 'muted' }))).toMatchObject(policyRefuses('romp_messages'));
    await service('UPDATE agent_bindings SET can_send = true WHERE id = $1', [a.binding]);
    expect(await outcome(as(a.member).from('romp_messages').insert({ binding_id: a.binding, sender_user_id: a.agentUser, body: 'spoof' }))).toMatchObject(policyRefuses('romp_messages'));
    expect(await outcome(as(b.owner).from('romp_messages').insert({ binding_id: a.binding, body: 'hi' }))).toMatchObject(policyRefuses('romp_messages'));
    expect(await service('SELECT count(*)::int AS n FROM romp_messages')).toEqual(before);
  });

  it('assets: another team\'s session, project or file is refused', async () => {
    const before = await service('SELECT (SELECT count(*) FROM assets_sessions) AS s, (SELECT count(*) FROM assets_items) AS i');
    expect(await outcome(as(a.member).from('assets_sessions').insert({ team_id: b.team, project_id: b.project }))).toMatchObject(policyRefuses('assets_sessions'));
    expect(await outcome(as(a.member).from('assets_sessions').insert({ team_id: a.team, project_id: b.project }))).toMatchObject(policyRefuses('assets_sessions'));
    expect(await outcome(as(a.member).from('assets_items').insert({ session_id: a.session, file_id: b.file }))).toMatchObject(policyRefuses('assets_items'));
    expect(await outcome(anon().from('assets_sessions').insert({ team_id: a.team, project_id: a.project }))).toMatchObject(deniedOn('assets_sessions', 401));
    expect(await service('SELECT (SELECT count(*) FROM assets_sessions) AS s, (SELECT count(*) FROM assets_items) AS i')).toEqual(before);
  });

  it('delete_api_key: a member who is not an admin (403) and another team\'s admin (404) change nothing', async () => {
    expect(await outcome(as(a.member).rpc('delete_api_key', { p_key_id: a.key }))).toMatchObject(refused(403, '42501', 'only the team owner or admin can delete an API key'));
    expect(await outcome(as(b.owner).rpc('delete_api_key', { p_key_id: a.key }))).toMatchObject(refused(404, 'P0002', 'API key not found'));
    expect(await service('SELECT deleted_at FROM api_keys WHERE id = $1', [a.key])).toEqual([{ deleted_at: null }]);
  });
});
