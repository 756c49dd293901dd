import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { buildApp } from '../../api/app.js';
import { runReadPipelined } from '../../shared/data-api/executor-repository.js';
import { anonKeysOf } from '../../shared/data-api/identity.js';
import { addTeamMember, createProject } from '../../shared/identity/service.js';
import { publishDirect } from '../harness/apps.js';
import { exampleGraph } from '../../shared/documents/example-graph.js';
import { credentialFactory } from '../harness/credentials.js';
import { runCli } from '../harness/cli.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// The data API at /rest/v1 driven by the real supabase-js client (and raw fetch for what the client
// cannot send), against the API as the harness boots it. Every refusal also checks nothing changed.

let stack: TestStack;
let origin: string;
let anonKey: string;
let factory: ReturnType<typeof credentialFactory>;
let owner: { id: string };
let teamId: string;
let projectIds: string[];
let documentIds: string[];
let ownerJwt: string;
/** A platform administrator: the only writer of model_provider_costs and site_settings (migration 0024). */
let adminJwt: string;

const client = (token?: () => Promise<string>): SupabaseClient =>
  createClient(origin, anonKey, { ...(token ? { accessToken: token } : {}), realtime: { transport: WebSocket as never } });

/** A raw request, with the anon key unless `headers` says otherwise. */
async function raw(path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  const response = await fetch(`${origin}${path}`, {
    method: init.method ?? 'GET',
    headers: { apikey: anonKey, authorization: `Bearer ${ownerJwt}`, ...init.headers },
    body: init.body,
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : null };
}

const costCount = async () => Number((await sql<{ n: string }>`select count(*) as n from model_provider_costs`.execute(stack.db)).rows[0]!.n);

beforeAll(async () => {
  stack = await createTestStack();
  factory = credentialFactory(stack);
  owner = await factory.user('owner');
  teamId = (await factory.team(owner.id)).id;
  projectIds = [];
  documentIds = [];
  for (const name of ['Alpha', 'Beta', 'Gamma']) {
    const project = await createProject(stack.db, { teamId, name, createdBy: owner.id });
    projectIds.push(project.id);
  }
  for (const [i, name] of ['Doc one', 'Doc two', 'Doc three'].entries()) {
    const id = randomUUID();
    await stack.db.insertInto('documents').values({ id, project_id: projectIds[i === 2 ? 1 : 0]!, name, graph: '{}', created_by: owner.id }).execute();
    documentIds.push(id);
  }
  ownerJwt = await factory.jwt(owner.id);
  const admin = await factory.user('platform');
  await stack.db.updateTable('users').set({ is_platform_admin: true }).where('id', '=', admin.id).execute();
  adminJwt = await factory.jwt(admin.id);
  await stack.app.listen({ port: 0, host: '127.0.0.1' });
  origin = `http://127.0.0.1:${(stack.app.server.address() as AddressInfo).port}`;
  anonKey = anonKeysOf(stack.deps.secrets).current!;
}, 60_000);

afterAll(async () => {
  await stack?.close();
});

describe('keys and identity', () => {
  it('cli data-api keys prints the origin and the anon key the service accepts', async () => {
    const result = await runCli(['data-api', 'keys'], { ...stack.env, PUBLIC_BASE_URL: 'https://app.example.com/base' });
    expect(result.code).toBe(0);
    expect(result.json).toEqual({ url: 'https://app.example.com', anonKey });
  });

  it('the anon key alone reads as anon (no rows under the policies); a user JWT as the user', async () => {
    const anon = await client().from('projects').select('id').in('id', projectIds);
    expect(anon.error).toBeNull();
    expect(anon.data).toEqual([]);
    const user = await client(async () => ownerJwt).from('projects').select('id').in('id', projectIds);
    expect(user.error).toBeNull();
    expect(user.data).toHaveLength(3);
  });

  it('refuses a missing or wrong anon key, other credentials and bad JWTs as Bearer (401), and writes nothing', async () => {
    const apiKey = await factory.apiKey(teamId, owner.id);
    const oauth = await factory.oauthToken(owner.id, ['runs:write']);
    const agent = await factory.agentToken(teamId, owner.id, []);
    const expired = await factory.jwt(owner.id, -60);
    const before = await costCount();
    const body = JSON.stringify({ provider: 'p', model: `m-${randomUUID()}`, input_cost_per_mtok: 1, output_cost_per_mtok: 2, currency: 'USD' });
    const cases: Array<[string, Record<string, string>]> = [
      ['no apikey', { apikey: '' }],
      ['wrong apikey', { apikey: `${anonKey.slice(0, -2)}xx` }],
      ['API key', { authorization: `Bearer ${apiKey.token}` }],
      ['OAuth token', { authorization: `Bearer ${oauth.token}` }],
      ['agent token', { authorization: `Bearer ${agent.token}` }],
      ['expired JWT', { authorization: `Bearer ${expired}` }],
      ['forged JWT', { authorization: `Bearer ${ownerJwt.slice(0, -4)}AAAA` }],
    ];
    for (const [label, headers] of cases) {
      const response = await raw('/rest/v1/model_provider_costs', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
      expect(response.status, label).toBe(401);
      expect(response.body, label).toMatchObject({ code: expect.stringMatching(/^PGRST30[13]$/), message: expect.any(String), details: null });
    }
    expect((await raw('/rest/v1/projects', { headers: { authorization: `Bearer ${expired}` } })).body).toMatchObject({ code: 'PGRST303', message: 'JWT expired' });
    expect(await costCount()).toBe(before);
  });
});

describe('reads', () => {
  const db = () => client(async () => ownerJwt);

  it('selects columns with aliases, and * without the columns the role may not read', async () => {
    const { data, error } = await db().from('projects').select('id, title:name').eq('id', projectIds[0]!);
    expect(error).toBeNull();
    expect(data).toEqual([{ id: projectIds[0], title: 'Alpha' }]);
    const keys = await db().from('api_keys').select('*').eq('team_id', teamId);
    expect(keys.error).toBeNull();
    expect(keys.data!.length).toBeGreaterThan(0);
    expect(Object.keys(keys.data![0]!)).not.toContain('key_hash');
    const secret = await db().from('api_keys').select('key_hash').eq('team_id', teamId);
    expect(secret.error).toMatchObject({ code: '42501' });
    expect(secret.status).toBe(403);
  });

  it('embeds many-to-one as an object and one-to-many as an array, with hints and !inner', async () => {
    const one = await db().from('documents').select('id, name, project:projects(id, name)').eq('id', documentIds[0]!).single();
    expect(one.error).toBeNull();
    expect(one.data).toEqual({ id: documentIds[0], name: 'Doc one', project: { id: projectIds[0], name: 'Alpha' } });

    const many = await db().from('projects').select('name, documents(name)').in('id', projectIds).order('name').order('name', { referencedTable: 'documents', ascending: false });
    expect(many.error).toBeNull();
    expect(many.data).toEqual([
      { name: 'Alpha', documents: [{ name: 'Doc two' }, { name: 'Doc one' }] },
      { name: 'Beta', documents: [{ name: 'Doc three' }] },
      { name: 'Gamma', documents: [] },
    ]);

    const hinted = await db().from('documents').select('id, projects!documents_project_id_fkey(name)').eq('id', documentIds[2]!);
    expect(hinted.error).toBeNull();
    expect(hinted.data).toEqual([{ id: documentIds[2], projects: { name: 'Beta' } }]);

    const inner = await db().from('projects').select('name, documents!inner(name)').in('id', projectIds).eq('documents.name', 'Doc three');
    expect(inner.error).toBeNull();
    expect(inner.data).toEqual([{ name: 'Beta', documents: [{ name: 'Doc three' }] }]);

    const limited = await db().from('projects').select('name, documents(name)').eq('id', projectIds[0]!).limit(1, { referencedTable: 'documents' }).order('name', { referencedTable: 'documents' });
    expect(limited.data).toEqual([{ name: 'Alpha', documents: [{ name: 'Doc one' }] }]);
  });

  it('filters: comparison, pattern, is, in, not, or/and', async () => {
    const names = async (query: PromiseLike<{ data: Array<{ name: string }> | null; error: unknown }>) => {
      const { data, error } = await query;
      expect(error).toBeNull();
      return data!.map((row) => row.name).sort();
    };
    const base = () => db().from('projects').select('name').in('id', projectIds);
    expect(await names(base().eq('name', 'Alpha'))).toEqual(['Alpha']);
    expect(await names(base().neq('name', 'Alpha'))).toEqual(['Beta', 'Gamma']);
    expect(await names(base().gt('name', 'Beta'))).toEqual(['Gamma']);
    expect(await names(base().gte('name', 'Beta'))).toEqual(['Beta', 'Gamma']);
    expect(await names(base().lt('name', 'Beta'))).toEqual(['Alpha']);
    expect(await names(base().lte('name', 'Beta'))).toEqual(['Alpha', 'Beta']);
    expect(await names(base().like('name', '%amm%'))).toEqual(['Gamma']);
    expect(await names(base().ilike('name', 'a*'))).toEqual(['Alpha']);
    expect(await names(base().is('system_purpose', null))).toEqual(['Alpha', 'Beta', 'Gamma']);
    expect(await names(base().not('name', 'in', '("Alpha","Beta")'))).toEqual(['Gamma']);
    expect(await names(base().or('name.eq.Alpha,name.eq.Gamma'))).toEqual(['Alpha', 'Gamma']);
    expect(await names(base().or('name.eq.Alpha,and(name.gt.B,name.lt.C)'))).toEqual(['Alpha', 'Beta']);
    expect(await names(base().not('name', 'eq', 'Beta'))).toEqual(['Alpha', 'Gamma']);
    expect(await names(base().in('name', ['Beta', 'with,comma', 'quote"and\\backslash']))).toEqual(['Beta']);
  });

  it('filters JSON with cs and cd', async () => {
    const key = `test.${randomUUID()}`;
    await stack.db.insertInto('site_settings').values({ key, value: JSON.stringify({ a: 1, b: [1, 2] }) }).execute();
    const platform = () => client(async () => adminJwt);
    const hidden = await db().from('site_settings').select('key').eq('key', key);
    expect(hidden.data).toEqual([]);
    const found = await platform().from('site_settings').select('key').eq('key', key).contains('value', { a: 1 });
    expect(found.data).toEqual([{ key }]);
    const missing = await platform().from('site_settings').select('key').eq('key', key).contains('value', { a: 2 });
    expect(missing.data).toEqual([]);
    const within = await platform().from('site_settings').select('key').eq('key', key).containedBy('value', { a: 1, b: [1, 2], c: 3 });
    expect(within.data).toEqual([{ key }]);
  });

  it('filters arrays with ov and cs, text with match and imatch, and isdistinct', async () => {
    const { appId } = await factory.oauthToken(owner.id, ['runs:write', 'documents:read']);
    const grants = () => db().from('grants').select('scopes').eq('app_id', appId);
    expect((await grants().overlaps('scopes', ['documents:read', 'nothing'])).data).toEqual([{ scopes: ['runs:write', 'documents:read'] }]);
    expect((await grants().contains('scopes', ['runs:write'])).data).toHaveLength(1);
    expect((await grants().overlaps('scopes', ['nothing'])).data).toEqual([]);
    const names = async (filter: string) => (await raw(`/rest/v1/projects?select=name&team_id=eq.${teamId}&${filter}&order=name`)).body;
    expect(await names('name=match.^[AB]')).toEqual([{ name: 'Alpha' }, { name: 'Beta' }]);
    expect(await names('name=imatch.^g')).toEqual([{ name: 'Gamma' }]);
    expect(await names('system_purpose=isdistinct.x')).toEqual([{ name: 'Alpha' }, { name: 'Beta' }, { name: 'Gamma' }]);
  });

  it('answers a CORS preflight from any origin with the headers supabase-js sends', async () => {
    const response = await fetch(`${origin}/rest/v1/projects`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'apikey,authorization,content-type,prefer,x-client-info' },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('access-control-allow-methods')).toContain('PATCH');
    expect(response.headers.get('access-control-allow-headers')).toContain('prefer');
    const read = await fetch(`${origin}/rest/v1/projects?select=id`, { headers: { origin: 'https://app.example.com', apikey: anonKey } });
    expect(read.headers.get('access-control-expose-headers')).toContain('content-range');
  });

  it('orders, pages with range, counts exactly with Content-Range, answers HEAD', async () => {
    const page = await db().from('projects').select('name', { count: 'exact' }).in('id', projectIds).order('name', { ascending: false }).range(1, 2);
    expect(page.error).toBeNull();
    expect(page.data).toEqual([{ name: 'Beta' }, { name: 'Alpha' }]);
    expect(page.count).toBe(3);
    const head = await db().from('projects').select('*', { count: 'exact', head: true }).in('id', projectIds);
    expect(head.error).toBeNull();
    expect(head.count).toBe(3);
    expect(head.data).toBeNull();
    const rawPage = await raw(`/rest/v1/projects?select=name&team_id=eq.${teamId}&order=name.asc`, { headers: { prefer: 'count=exact', range: '0-1', 'range-unit': 'items' } });
    expect(rawPage.status).toBe(206);
    expect(rawPage.headers.get('content-range')).toBe('0-1/3');
    expect(rawPage.body).toEqual([{ name: 'Alpha' }, { name: 'Beta' }]);
    const nullsLast = await db().from('projects').select('name').in('id', projectIds).order('system_purpose', { nullsFirst: false }).order('name').limit(1);
    expect(nullsLast.data).toEqual([{ name: 'Alpha' }]);
  });

  it('.single() gives one object, or 406 PGRST116 when not exactly one row', async () => {
    const one = await db().from('projects').select('name').eq('id', projectIds[1]!).single();
    expect(one.data).toEqual({ name: 'Beta' });
    const many = await db().from('projects').select('name').in('id', projectIds).single();
    expect(many.status).toBe(406);
    expect(many.error).toMatchObject({ code: 'PGRST116', details: 'The result contains 3 rows' });
    const none = await db().from('projects').select('name').eq('id', randomUUID()).maybeSingle();
    expect(none.error).toBeNull();
    expect(none.data).toBeNull();
  });
  it('reads share the service\'s pool (also as npm start builds the API, without DATABASE_URL), and no connection keeps a role or claims', async () => {
    // The API as npm start builds it: the database URL is not in its configuration.
    const fallback = await buildApp({ ...stack.deps, config: { ...stack.deps.config, DATABASE_URL: undefined } }, { logger: false });
    try {
      const call = (url: string, token: string | null = ownerJwt) => fallback.inject({ method: 'GET', url, headers: { apikey: anonKey, ...(token ? { authorization: `Bearer ${token}` } : {}) } });
      const results = await Promise.all([
        call(`/rest/v1/projects?select=id&team_id=eq.${teamId}`),
        call(`/rest/v1/api_keys?select=key_hash&team_id=eq.${teamId}`),
        call('/rest/v1/projects?select=id&id=eq.not-a-uuid'),
        call(`/rest/v1/projects?select=id&team_id=eq.${teamId}`, null),
        call(`/rest/v1/projects?select=id&team_id=eq.${teamId}&offset=10`),
      ]);
      expect(results.map((r) => r.statusCode)).toEqual([200, 403, 400, 200, 416]);
      expect(results[0]!.json()).toHaveLength(3);
      expect(results[2]!.json()).toMatchObject({ code: '22P02' });
      expect(results[3]!.json()).toEqual([]);
    } finally {
      await fallback.close();
    }
    // Hold every connection of the pool (size 5) at once and ask each who it is.
    const seen = await Promise.all(Array.from({ length: 5 }, () => stack.db.connection().execute(async (connection) =>
      (await sql<{ who: string; claims: string | null; timeout: string }>`select current_user as who, current_setting('request.jwt.claims', true) as claims, current_setting('statement_timeout') as timeout, pg_sleep(0.05)`.execute(connection)).rows[0]!)));
    for (const { who, claims, timeout } of seen) {
      expect(['anon', 'authenticated']).not.toContain(who);
      expect(claims ?? '').toBe('');
      expect(timeout).toBe('0');
    }
  });
});

describe('one round trip reads on the data API\'s own pool', () => {
  it('set role and claims only for their own implicit transaction, also when the read fails', async () => {
    const pool = new pg.Pool({ connectionString: stack.databaseUrl, max: 1 });
    try {
      const claims = JSON.stringify({ sub: owner.id, role: 'authenticated' });
      const read = await runReadPipelined(pool, { role: 'authenticated', claims }, {
        columns: `current_user::text as body, (select count(*) from projects where team_id = $1)::int as rows`, from: '', values: [teamId],
      });
      expect(read).toEqual({ body: 'authenticated', rows: '3' });
      const failed = await runReadPipelined(pool, { role: 'anon', claims: '{}' }, { columns: `$1::uuid::text as body`, from: '', values: ['not-a-uuid'] }).catch((e: unknown) => e);
      expect(failed).toMatchObject({ code: '22P02' });
      const anon = await runReadPipelined(pool, { role: 'anon', claims: '{}' }, { columns: `(select count(*) from projects)::text as body`, from: '', values: [] });
      expect(anon.body).toBe('0');
      const after = await pool.query<{ who: string; claims: string | null; timeout: string }>(`select current_user as who, current_setting('request.jwt.claims', true) as claims, current_setting('statement_timeout') as timeout`);
      expect(after.rows[0]!.who).not.toMatch(/^(anon|authenticated)$/);
      expect(after.rows[0]!.claims ?? '').toBe('');
      expect(after.rows[0]!.timeout).toBe('0');
      // The settings statement and each read's shape are prepared once on the connection and reused.
      const again = await runReadPipelined(pool, { role: 'anon', claims: '{}' }, { columns: `(select count(*) from projects)::text as body`, from: '', values: [] });
      expect(again.body).toBe('0');
      const prepared = await pool.query<{ name: string }>(`select name from pg_prepared_statements order by name`);
      expect(prepared.rows.map((r) => r.name)).toContain('data_api_settings');
      expect(prepared.rows).toHaveLength(4);
      expect(prepared.rows.every((r) => r.name.startsWith('data_api_'))).toBe(true);
    } finally {
      await pool.end();
    }
  });
});

describe('writes', () => {
  const db = () => client(async () => adminJwt);
  const model = () => `model-${randomUUID().slice(0, 8)}`;

  it('inserts one object (minimal and representation) and refuses a duplicate with 409 23505', async () => {
    const name = model();
    const minimal = await db().from('model_provider_costs').insert({ provider: 'acme', model: name, input_cost_per_mtok: 1.5, output_cost_per_mtok: 3, currency: 'USD' });
    expect(minimal.error).toBeNull();
    expect(minimal.status).toBe(201);
    expect(minimal.data).toBeNull();
    const second = model();
    const shown = await db().from('model_provider_costs').insert({ provider: 'acme', model: second, input_cost_per_mtok: 2, output_cost_per_mtok: 4, currency: 'USD' })
      .select('provider, model').single();
    expect(shown.error).toBeNull();
    expect(shown.data).toEqual({ provider: 'acme', model: second });
    const before = await costCount();
    const duplicate = await db().from('model_provider_costs').insert({ provider: 'acme', model: name, input_cost_per_mtok: 9, output_cost_per_mtok: 9, currency: 'USD' });
    expect(duplicate.status).toBe(409);
    expect(duplicate.error).toMatchObject({ code: '23505' });
    expect(await costCount()).toBe(before);
  });

  it('upserts on (provider, model): merge-duplicates updates, ignore-duplicates leaves the row', async () => {
    const name = model();
    const first = await db().from('model_provider_costs').upsert({ provider: 'acme', model: name, input_cost_per_mtok: 1, output_cost_per_mtok: 1, currency: 'USD' }, { onConflict: 'provider,model' }).select('input_cost_per_mtok');
    expect(first.error).toBeNull();
    const merged = await db().from('model_provider_costs').upsert({ provider: 'acme', model: name, input_cost_per_mtok: 7, output_cost_per_mtok: 1, currency: 'USD' }, { onConflict: 'provider,model' }).select('input_cost_per_mtok');
    expect(merged.error).toBeNull();
    expect(merged.data).toHaveLength(1);
    const ignored = await db().from('model_provider_costs').upsert({ provider: 'acme', model: name, input_cost_per_mtok: 99, output_cost_per_mtok: 1, currency: 'USD' }, { onConflict: 'provider,model', ignoreDuplicates: true }).select('input_cost_per_mtok');
    expect(ignored.error).toBeNull();
    expect(ignored.data).toEqual([]);
    const row = await stack.db.selectFrom('model_provider_costs').select('input_cost_per_mtok').where('model', '=', name).executeTakeFirstOrThrow();
    expect(Number(row.input_cost_per_mtok)).toBe(7);
  });

  it('updates and deletes by filters, with count', async () => {
    const name = model();
    await db().from('model_provider_costs').insert({ provider: 'upd', model: name, input_cost_per_mtok: 1, output_cost_per_mtok: 1, currency: 'USD' });
    const updated = await db().from('model_provider_costs').update({ output_cost_per_mtok: 5 }, { count: 'exact' }).eq('model', name).select('model, output_cost_per_mtok');
    expect(updated.error).toBeNull();
    expect(updated.count).toBe(1);
    expect(Number((updated.data as Array<{ output_cost_per_mtok: number }>)[0]!.output_cost_per_mtok)).toBe(5);
    const deleted = await db().from('model_provider_costs').delete({ count: 'exact' }).eq('model', name);
    expect(deleted.error).toBeNull();
    expect(deleted.count).toBe(1);
    expect(await stack.db.selectFrom('model_provider_costs').select('id').where('model', '=', name).executeTakeFirst()).toBeUndefined();
  });

  it('a singular write that touches other than one row is refused (406) and undone', async () => {
    const before = await costCount();
    const provider = `single-${randomUUID().slice(0, 6)}`;
    const rows = [model(), model()].map((m) => ({ provider, model: m, input_cost_per_mtok: 1, output_cost_per_mtok: 1, currency: 'USD' }));
    const result = await db().from('model_provider_costs').insert(rows).select('model').single();
    expect(result.status).toBe(406);
    expect(result.error).toMatchObject({ code: 'PGRST116' });
    expect(await costCount()).toBe(before);
  });

  it('a site setting written through the data API takes effect as settings set does; an invalid value is refused and nothing changes', async () => {
    const key = 'run.max_timeout_seconds';
    expect(await stack.deps.settings.get(key)).toBe(300);
    const written = await db().from('site_settings').upsert({ key, value: 120 }, { onConflict: 'key' });
    expect(written.error).toBeNull();
    await expect.poll(() => stack.deps.settings.get(key), { timeout: 5000 }).toBe(120);
    const refused = await db().from('site_settings').update({ value: -5 }).eq('key', key);
    expect(refused.status).toBe(400);
    expect(refused.error).toMatchObject({ code: '23514', message: expect.stringContaining('run.max_timeout_seconds') });
    const refusedInsert = await db().from('site_settings').upsert({ key, value: 'soon' });
    expect(refusedInsert.status).toBe(400);
    const stored = await stack.db.selectFrom('site_settings').select('value').where('key', '=', key).executeTakeFirstOrThrow();
    expect(stored.value).toBe(120);
  });
});

describe('refusals (400/404/416, nothing reaches SQL that is not allowlisted)', () => {
  it('SQL in select, order, filters and quoted identifiers is a 400', async () => {
    const started = Date.now();
    const sleep = await raw('/rest/v1/projects?select=*,pg_sleep(1)');
    expect(sleep.status).toBe(400);
    expect(Date.now() - started).toBeLessThan(900);
    for (const path of [
      '/rest/v1/projects?select=id&order=id;drop',
      '/rest/v1/projects?select="id"',
      '/rest/v1/projects?select=id,"name; drop table projects"',
      '/rest/v1/projects?select=id&"name"=eq.x',
      '/rest/v1/projects?select=id&name;drop=eq.x',
      '/rest/v1/projects?select=id::text',
      '/rest/v1/projects?select=id&name=fts.x',
      '/rest/v1/projects?select=id&order=id.desc;select',
    ]) {
      const response = await raw(path);
      expect(response.status, path).toBe(400);
      expect(response.body, path).toMatchObject({ code: expect.any(String), message: expect.any(String) });
      expect(Object.keys(response.body!).sort(), path).toEqual(['code', 'details', 'hint', 'message']);
    }
    expect((await stack.db.selectFrom('projects').select('id').where('id', 'in', projectIds).execute()).length).toBe(3);
  });

  it('an unknown column is 400 42703, an unknown relation 404 PGRST205, an unknown function 404 PGRST202', async () => {
    expect(await raw('/rest/v1/projects?select=nope')).toMatchObject({ status: 400, body: { code: '42703' } });
    expect(await raw('/rest/v1/projects?nope=eq.1')).toMatchObject({ status: 400, body: { code: '42703' } });
    expect(await raw('/rest/v1/users?select=*')).toMatchObject({ status: 404, body: { code: 'PGRST205' } });
    expect(await raw('/rest/v1/pg_roles')).toMatchObject({ status: 404, body: { code: 'PGRST205' } });
    const fn = await client(async () => ownerJwt).rpc('pg_sleep', { seconds: 1 });
    expect(fn.status).toBe(404);
    expect(fn.error).toMatchObject({ code: 'PGRST202' });
    expect(await raw('/rest/v1/projects?select=id,users(id)')).toMatchObject({ status: 400, body: { code: 'PGRST200' } });
  });

  it('an offset past the end is 416 PGRST103', async () => {
    const past = await client(async () => ownerJwt).from('projects').select('id').in('id', projectIds).range(10, 19);
    expect(past.status).toBe(416);
    expect(past.error).toMatchObject({ code: 'PGRST103' });
    const header = await raw(`/rest/v1/projects?select=id&team_id=eq.${teamId}`, { headers: { range: '5-9' } });
    expect(header.status).toBe(416);
    expect((await raw(`/rest/v1/projects?select=id&team_id=eq.${teamId}`, { headers: { range: '3-9' } })).status).toBe(200);
  });

  it('a 10 MB filter value is refused before any SQL', async () => {
    const huge = 'x'.repeat(10 * 1024 * 1024);
    const response = await fetch(`${origin}/rest/v1/projects?name=eq.${huge}`, { headers: { apikey: anonKey } }).catch(() => null);
    expect(response === null || (response.status >= 400 && response.status < 500)).toBe(true);
    const body = await raw('/rest/v1/model_provider_costs', { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ currency: huge }) });
    expect(body.status).toBe(413);
  });

  it('what the subset leaves out is a 400 naming it', async () => {
    const csv = await client(async () => ownerJwt).from('projects').select('id').csv();
    expect(csv.status).toBe(406);
    for (const [path, headers] of [
      ['/rest/v1/projects?select=id,...documents(name)', {}],
      ['/rest/v1/projects?select=id,documents(count)', {}],
      ['/rest/v1/projects?select=id', { prefer: 'tx=rollback' }],
      ['/rest/v1/projects?select=id&name=like(any).{a*}', {}],
    ] as Array<[string, Record<string, string>]>) {
      const response = await raw(path, { headers });
      expect(response.status, path).toBe(400);
      expect(String(response.body!.message), path).toMatch(/Unsupported|Could not find|does not exist/);
    }
    expect(await raw('/rest/v1/projects', { headers: { 'accept-profile': 'private' } })).toMatchObject({ status: 406, body: { code: 'PGRST106' } });
  });
});

describe('RPC', () => {
  it('get_usage_heatmap answers members with rows per UTC day (POST and GET); others get 42501', async () => {
    const { deploymentId, documentId } = await publishDirect(stack.db, exampleGraph, { teamId, publishedBy: owner.id });
    const { project_id: projectId } = await stack.db.selectFrom('deployments').select('project_id').where('id', '=', deploymentId).executeTakeFirstOrThrow();
    await stack.db.insertInto('runs').values({ id: randomUUID(), deployment_id: deploymentId, document_id: documentId, project_id: projectId, team_id: teamId, inputs: '{}', trigger_source: 'api-key' } as never).execute();
    const posted = await client(async () => ownerJwt).rpc('get_usage_heatmap', { p_team_id: teamId, p_days: 7 });
    expect(posted.error).toBeNull();
    const today = new Date().toISOString().slice(0, 10);
    expect(posted.data).toEqual([{ day: today, runs: 1, credits_milli: 0 }]);
    const viaGet = await client(async () => ownerJwt).rpc('get_usage_heatmap', { p_team_id: teamId }, { get: true });
    expect(viaGet.error).toBeNull();
    expect(viaGet.data).toEqual(posted.data);
    const outsider = await factory.user('outsider');
    const refused = await client(async () => factory.jwt(outsider.id)).rpc('get_usage_heatmap', { p_team_id: teamId });
    expect(refused.status).toBe(403);
    expect(refused.error).toMatchObject({ code: '42501' });
    const anon = await client().rpc('get_usage_heatmap', { p_team_id: teamId });
    expect(anon.status).toBe(401);
    const wrongArgs = await client(async () => ownerJwt).rpc('get_usage_heatmap', { team: teamId });
    expect(wrongArgs.status).toBe(404);
    expect(wrongArgs.error).toMatchObject({ code: 'PGRST202' });
  });

  it('delete_api_key makes the key fail at the HTTP API at once', async () => {
    const key = await factory.apiKey(teamId, owner.id);
    const call = () => stack.app.inject({ method: 'GET', url: `/teams/${teamId}/projects`, headers: { authorization: `Bearer ${key.token}` } });
    expect((await call()).statusCode).toBe(200);
    const member = await factory.user('member');
    await addTeamMember(stack.db, { teamId, userId: member.id, role: 'member' });
    const notAdmin = await client(async () => factory.jwt(member.id)).rpc('delete_api_key', { p_key_id: key.id });
    expect(notAdmin.status).toBe(403);
    expect((await call()).statusCode).toBe(200);
    const missing = await client(async () => ownerJwt).rpc('delete_api_key', { p_key_id: randomUUID() });
    expect(missing.status).toBe(404);
    expect(missing.error).toMatchObject({ code: 'P0002' });
    const deleted = await client(async () => ownerJwt).rpc('delete_api_key', { p_key_id: key.id });
    expect(deleted.error).toBeNull();
    expect(deleted.status).toBe(204);
    expect((await call()).statusCode).toBe(401);
  });
});
