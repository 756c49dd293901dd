import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertChargedRun } from '../../shared/app-runs/run-events-repository.js';
import type { Graph } from '../../shared/documents/graph-schema.js';
import { addTeamMember } from '../../shared/identity/service.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// The row-level security of the data API (migration 0024), in SQL: each statement runs exactly as
// the REST engine runs a request's, in a transaction after `SET LOCAL ROLE anon|authenticated`
// with the JWT's claims in `request.jwt.claims`. Every policy gets a test that a member of team A
// never sees or changes team B's rows whatever the filter; every refused write asserts that
// nothing changed, read back over the service's own connection (which owns the tables).

const graph = { blocks: [{ id: 'o', type: 'output', name: 'out', config: { value: 'x' } }], edges: [] } as unknown as Graph;

type Row = Record<string, unknown>;
interface Tenant {
  team: string; project: string; document: string; deployment: string; run: string; file: string; key: string;
  subscription: string; transaction: string; order: string; schedule: string; session: string; item: string; audit: string;
  owner: string; admin: string; member: string; agentUser: string; binding: string; message: string;
}

describe('data API row-level security (policies in SQL)', () => {
  let stack: TestStack;
  let pool: pg.Pool;
  let a: Tenant;
  let b: Tenant;
  let outsider: string;
  let platformAdmin: string;
  const ruleKey = 'llmPer1kTokensMilli';
  let costId: string;

  /** The service's own connection (table owner: RLS does not apply). */
  const service = async (text: string, values: unknown[] = []): Promise<Row[]> => (await pool.query(text, values)).rows as Row[];

  /**
   * One statement as the data API runs it: `userId` null is the anon key alone. Resolves with the
   * rows, or rejects with PostgreSQL's error (its `code` is the SQLSTATE PostgREST answers).
   */
  async function as(userId: string | null, text: string, values: unknown[] = []): Promise<Row[]> {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(userId ? 'SET LOCAL ROLE authenticated' : 'SET LOCAL ROLE anon');
      const claims = userId ? { sub: userId, role: 'authenticated', aud: 'authenticated' } : { role: 'anon' };
      await client.query(`SELECT set_config('request.jwt.claims', $1, true)`, [JSON.stringify(claims)]);
      const { rows } = await client.query(text, values);
      await client.query('COMMIT');
      return rows as Row[];
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    } finally {
      client.release();
    }
  }
  const refusal = async (call: Promise<unknown>) => {
    try {
      await call;
      return 'allowed';
    } catch (error) {
      const { code, message } = error as { code: string; message: string };
      return { code, message };
    }
  };
  const denied = (table: string, kind: 'table' | 'view' = 'table') => ({ code: '42501', message: `permission denied for ${kind} ${table}` });
  const rlsViolation = (table: string) => ({ code: '42501', message: `new row violates row-level security policy for table "${table}"` });

  async function tenant(label: string): Promise<Tenant> {
    const make = credentialFactory(stack);
    const owner = (await make.user(`${label}-owner`)).id;
    const admin = (await make.user(`${label}-admin`)).id;
    const member = (await make.user(`${label}-member`)).id;
    const team = (await make.team(owner, `Team ${label}`)).id;
    await addTeamMember(stack.db, { teamId: team, userId: admin, role: 'admin' });
    await addTeamMember(stack.db, { teamId: team, userId: member, role: 'member' });
    const app = await publishDirect(stack.db, graph, { teamId: team, publishedBy: owner });
    const project = (await service('SELECT project_id FROM documents WHERE id = $1', [app.documentId]))[0]!.project_id;
    const key = (await make.apiKey(team, owner)).id;
    const agent = await make.agentToken(team, member, []);
    const run = randomUUID();
    await insertChargedRun(stack.db, {
      runId: run, deploymentId: app.deploymentId, documentId: app.documentId, projectId: project as string, teamId: team,
      triggerSource: 'api', apiKeyId: null, userId: owner, inputs: {}, timeoutSeconds: null,
    }, 0);
    const one = async (text: string, values: unknown[]) => (await service(text, values))[0]!.id as string;
    const file = await one(`INSERT INTO files (id, project_id, team_id, uploaded_by, size, content_type, sha256, storage_key)
      VALUES (gen_random_uuid(), $1, $2, $3, 3, 'text/plain', repeat('ab', 32), $4) RETURNING id`, [project, team, owner, `k/${randomUUID()}`]);
    const price = await one(`INSERT INTO billing_prices (id, product_type, product_code, name, amount, currency, credits)
      VALUES (gen_random_uuid(), 'credits', $1, 'Pack', 100, 'USD', 1000) RETURNING id`, [`pack-${randomUUID().slice(0, 8)}`]);
    return {
      team, project: project as string, document: app.documentId, deployment: app.deploymentId, run, file, key, owner, admin, member,
      agentUser: agent.agentUserId, binding: agent.bindingId,
      subscription: await one(`INSERT INTO subscriptions (team_id, plan_code) VALUES ($1, 'pro') RETURNING id`, [team]),
      transaction: await one(`INSERT INTO credit_transactions (id, team_id, amount_milli, reason) VALUES (gen_random_uuid(), $1, 5000, 'operator_grant') RETURNING id`, [team]),
      order: await one(`INSERT INTO billing_orders (id, team_id, user_id, price_id, provider, provider_order_id, amount, currency, credits, product_type, billing_period, pay_url)
        VALUES (gen_random_uuid(), $1, $2, $3, 'mock', $4, 100, 'USD', 1000, 'credits', 'one_time', 'https://pay.example/secret') RETURNING id`, [team, owner, price, `o-${randomUUID()}`]),
      schedule: await one(`INSERT INTO schedules (id, project_id, team_id, name, cron_expression, timeout_ms) VALUES (gen_random_uuid(), $1, $2, 'nightly', '0 3 * * *', 60000) RETURNING id`, [project, team]),
      session: await one(`INSERT INTO assets_sessions (team_id, project_id, created_by) VALUES ($1, $2, $3) RETURNING id`, [team, project, member]),
      item: '',
      audit: await one(`INSERT INTO audit_logs (team_id, actor_id, action, target_type, target_id) VALUES ($1, $2, 'key.created', 'api_key', $3) RETURNING id`, [team, owner, key]),
      message: await one(`INSERT INTO romp_messages (binding_id, sender_user_id, body) VALUES ($1, $2, 'hello') RETURNING id`, [agent.bindingId, member]),
    };
  }

  beforeAll(async () => {
    stack = await createTestStack();
    pool = new pg.Pool({ connectionString: stack.databaseUrl, max: 4 });
    a = await tenant('a');
    b = await tenant('b');
    for (const t of [a, b]) {
      t.item = (await service(`INSERT INTO assets_items (session_id, file_id, created_by) VALUES ($1, $2, $3) RETURNING id`, [t.session, t.file, t.member]))[0]!.id as string;
    }
    const make = credentialFactory(stack);
    outsider = (await make.user('outsider')).id;
    platformAdmin = (await make.user('platform')).id;
    await service('UPDATE users SET is_platform_admin = true WHERE id = $1', [platformAdmin]);
    await make.oauthToken(a.member, ['profile']);
    await make.oauthToken(b.member, ['profile']);
    await service(`UPDATE billing_rules SET deleted_at = now() WHERE deleted_at IS NULL`);
    await service(`INSERT INTO billing_rules (rule_key, value) VALUES ($1, '5')`, [ruleKey]);
    costId = (await service(`INSERT INTO model_provider_costs (provider, model, input_cost_per_mtok, output_cost_per_mtok) VALUES ('p', $1, 1, 2) RETURNING id`, [`m-${randomUUID()}`]))[0]!.id as string;
    await service(`INSERT INTO site_settings (key, value) VALUES ('run.max_timeout_seconds', '300') ON CONFLICT (key) DO NOTHING`);
  });
  afterAll(async () => {
    await pool?.end();
    await stack?.close();
  });

  // Member-read relations: the column naming the row's team (documents: through its project), and
  // the row of each tenant.
  const memberRelations: Array<{ relation: string; team: string; id: keyof Tenant; idColumn?: string }> = [
    { relation: 'subscriptions', team: 'team_id', id: 'subscription' },
    { relation: 'credit_balances', team: 'team_id', id: 'team', idColumn: 'team_id' },
    { relation: 'credit_transactions', team: 'team_id', id: 'transaction' },
    { relation: 'api_keys', team: 'team_id', id: 'key' },
    { relation: 'documents', team: 'access_project_team(project_id)', id: 'document' },
    { relation: 'deployments', team: 'team_id', id: 'deployment' },
    { relation: 'projects', team: 'team_id', id: 'project' },
    { relation: 'files', team: 'team_id', id: 'file' },
    { relation: 'team_members', team: 'team_id', id: 'member', idColumn: 'user_id' },
    { relation: 'runs', team: 'team_id', id: 'run' },
    { relation: 'payment_orders', team: 'team_id', id: 'order' },
    { relation: 'project_schedules', team: 'team_id', id: 'schedule' },
    { relation: 'assets_sessions', team: 'team_id', id: 'session' },
    { relation: 'assets_items', team: 'team_id', id: 'item' },
  ];

  describe.each(memberRelations)('$relation: members of the row\'s team read it', ({ relation, team, id, idColumn = 'id' }) => {
    const teams = (rows: Row[]) => [...new Set(rows.map((r) => r.t))];

    it('a member of team A sees A\'s rows and never B\'s, whatever the filter', async () => {
      for (const reader of [a.member, a.admin, a.owner, a.agentUser]) {
        expect(teams(await as(reader, `SELECT ${team} AS t FROM ${relation}`))).toEqual([a.team]);
        expect(await as(reader, `SELECT ${idColumn} FROM ${relation} WHERE ${idColumn} = $1`, [a[id]])).toHaveLength(1);
        expect(await as(reader, `SELECT ${idColumn} FROM ${relation} WHERE ${idColumn} = $1`, [b[id]])).toEqual([]);
        expect(teams(await as(reader, `SELECT ${team} AS t FROM ${relation} WHERE ${team} = $1 OR true`, [b.team]))).toEqual([a.team]);
        expect(await as(reader, `SELECT count(*)::int AS n FROM ${relation} WHERE ${team} = $1`, [b.team])).toEqual([{ n: 0 }]);
      }
    });

    it('the anon key alone, and a signed-in user of no team, read 0 rows', async () => {
      expect(await as(null, `SELECT count(*)::int AS n FROM ${relation}`)).toEqual([{ n: 0 }]);
      expect(await as(outsider, `SELECT count(*)::int AS n FROM ${relation}`)).toEqual([{ n: 0 }]);
      expect(await as(platformAdmin, `SELECT count(*)::int AS n FROM ${relation} WHERE ${idColumn} = $1`, [a[id]])).toEqual([{ n: 0 }]);
    });
  });

  it('secret columns are never readable: api_keys.key_hash, files.storage_key, a payment order\'s pay_url', async () => {
    expect(await refusal(as(a.admin, 'SELECT key_hash FROM api_keys'))).toEqual(denied('api_keys'));
    expect(await refusal(as(a.admin, 'SELECT * FROM api_keys'))).toEqual(denied('api_keys'));
    expect(await refusal(as(a.admin, 'SELECT storage_key FROM files'))).toEqual(denied('files'));
    expect(await refusal(as(a.admin, 'SELECT pay_url FROM payment_orders'))).toMatchObject({ code: '42703' });
    expect(await refusal(as(a.admin, 'SELECT pay_url FROM billing_orders'))).toEqual(denied('billing_orders'));
    expect(await as(a.admin, 'SELECT id, name, usage_credits FROM api_keys')).toEqual([{ id: a.key, name: 'test key', usage_credits: 0 }]);
  });

  describe('credit_balances: admins update the auto top-up columns only', () => {
    const balance = async (team: string) => (await service('SELECT * FROM credit_balances WHERE team_id = $1', [team]))[0];

    it('an admin of A turns auto top-up on for A', async () => {
      const rows = await as(a.admin, 'UPDATE credit_balances SET auto_topup_enabled = true, auto_topup_threshold_milli = 1000, auto_topup_amount_milli = 5000 WHERE team_id = $1 RETURNING team_id', [a.team]);
      expect(rows).toEqual([{ team_id: a.team }]);
      expect(await balance(a.team)).toMatchObject({ auto_topup_enabled: true, auto_topup_threshold_milli: 1000, auto_topup_amount_milli: 5000 });
      await service('UPDATE credit_balances SET auto_topup_enabled = false WHERE team_id = $1', [a.team]);
    });

    it('a member of A, and an admin of A on B\'s row, change nothing; balance_milli is refused', async () => {
      const before = [await balance(a.team), await balance(b.team)];
      expect(await as(a.member, 'UPDATE credit_balances SET auto_topup_enabled = true WHERE team_id = $1 RETURNING team_id', [a.team])).toEqual([]);
      expect(await as(a.admin, 'UPDATE credit_balances SET auto_topup_enabled = true WHERE team_id = $1 OR true RETURNING team_id', [b.team])).toEqual([{ team_id: a.team }]);
      await service('UPDATE credit_balances SET auto_topup_enabled = false WHERE team_id = $1', [a.team]);
      expect(await as(a.admin, 'UPDATE credit_balances SET auto_topup_enabled = true WHERE team_id = $1', [b.team])).toEqual([]);
      expect(await refusal(as(a.admin, 'UPDATE credit_balances SET balance_milli = 99999999 WHERE team_id = $1', [a.team]))).toEqual(denied('credit_balances'));
      expect(await refusal(as(a.admin, 'INSERT INTO credit_balances (team_id) VALUES ($1)', [randomUUID()]))).toEqual(denied('credit_balances'));
      expect(await refusal(as(a.admin, 'DELETE FROM credit_balances WHERE team_id = $1', [a.team]))).toEqual(denied('credit_balances'));
      expect([await balance(a.team), await balance(b.team)]).toEqual(before);
    });
  });

  describe('api_keys: admins update name, description, limit_credits; nobody inserts', () => {
    const key = async (id: string) => (await service('SELECT * FROM api_keys WHERE id = $1', [id]))[0];

    it('an admin of A renames A\'s key', async () => {
      expect(await as(a.admin, `UPDATE api_keys SET name = 'renamed', description = 'd', limit_credits = 10 WHERE id = $1 RETURNING id`, [a.key])).toEqual([{ id: a.key }]);
      expect(await key(a.key)).toMatchObject({ name: 'renamed', description: 'd', limit_credits: 10 });
      await service(`UPDATE api_keys SET name = 'test key', description = NULL, limit_credits = NULL WHERE id = $1`, [a.key]);
    });

    it('B\'s keys, a plain member, usage_credits, key_hash and inserts are refused; nothing changes', async () => {
      const before = [await key(a.key), await key(b.key)];
      expect(await as(a.admin, `UPDATE api_keys SET name = 'x' WHERE id = $1 RETURNING id`, [b.key])).toEqual([]);
      expect(await as(a.member, `UPDATE api_keys SET name = 'x' WHERE id = $1 RETURNING id`, [a.key])).toEqual([]);
      expect(await refusal(as(a.admin, 'UPDATE api_keys SET usage_credits = 0 WHERE id = $1', [a.key]))).toEqual(denied('api_keys'));
      expect(await refusal(as(a.admin, `UPDATE api_keys SET key_hash = 'x' WHERE id = $1`, [a.key]))).toEqual(denied('api_keys'));
      expect(await refusal(as(a.admin, `UPDATE api_keys SET deleted_at = now() WHERE id = $1`, [a.key]))).toEqual(denied('api_keys'));
      expect(await refusal(as(a.admin, `INSERT INTO api_keys (team_id, created_by, name, key_hash) VALUES ($1, $2, 'k', 'h')`, [a.team, a.admin]))).toEqual(denied('api_keys'));
      expect(await refusal(as(a.admin, 'DELETE FROM api_keys WHERE id = $1', [a.key]))).toEqual(denied('api_keys'));
      expect([await key(a.key), await key(b.key)]).toEqual(before);
    });
  });

  it('the other member-read relations take no write from anyone', async () => {
    const writes: Array<[string, string, unknown[]]> = [
      ['subscriptions', `UPDATE subscriptions SET status = 'canceled' WHERE id = $1`, [a.subscription]],
      ['credit_transactions', `INSERT INTO credit_transactions (id, team_id, amount_milli, reason) VALUES (gen_random_uuid(), $1, 1, 'x')`, [a.team]],
      ['documents', `UPDATE documents SET name = 'x' WHERE id = $1`, [a.document]],
      ['deployments', `DELETE FROM deployments WHERE id = $1`, [a.deployment]],
      ['projects', `UPDATE projects SET name = 'x' WHERE id = $1`, [a.project]],
      ['files', `DELETE FROM files WHERE id = $1`, [a.file]],
      ['team_members', `INSERT INTO team_members (team_id, user_id, role) VALUES ($1, $2, 'owner')`, [b.team, a.owner]],
      ['runs', `UPDATE runs SET status = 'failed' WHERE id = $1`, [a.run]],
      ['payment_orders', `UPDATE payment_orders SET status = 'paid' WHERE id = $1`, [a.order]],
      ['project_schedules', `UPDATE project_schedules SET enabled = false WHERE id = $1`, [a.schedule]],
      ['grants', `DELETE FROM grants`, []],
    ];
    const snapshot = () => service(`SELECT (SELECT count(*) FROM credit_transactions) AS t, (SELECT count(*) FROM team_members) AS m,
      (SELECT count(*) FROM deployments) AS d, (SELECT count(*) FROM files) AS f, (SELECT count(*) FROM oauth_grants) AS g,
      (SELECT status FROM subscriptions WHERE id = $1) AS s, (SELECT name FROM documents WHERE id = $2) AS doc, (SELECT name FROM projects WHERE id = $3) AS p,
      (SELECT status FROM runs WHERE id = $4) AS r, (SELECT status FROM billing_orders WHERE id = $5) AS o, (SELECT enabled FROM schedules WHERE id = $6) AS e`,
    [a.subscription, a.document, a.project, a.run, a.order, a.schedule]);
    const before = await snapshot();
    for (const [relation, text, values] of writes) {
      const kind = ['payment_orders', 'project_schedules', 'grants'].includes(relation) ? 'view' : 'table';
      expect(await refusal(as(a.owner, text, values)), relation).toEqual(denied(relation, kind));
    }
    expect(await snapshot()).toEqual(before);
  });

  describe('billing_rules: signed-in users read, platform admins insert and update, nobody deletes', () => {
    it('any signed-in user reads every rule; the anon key reads none', async () => {
      const all = await service('SELECT id FROM billing_rules ORDER BY id');
      expect(await as(b.member, 'SELECT id FROM billing_rules ORDER BY id')).toEqual(all);
      expect(await as(outsider, 'SELECT count(*)::int AS n FROM billing_rules WHERE rule_key = $1', [ruleKey])).toEqual([{ n: 1 }]);
      expect(await as(null, 'SELECT count(*)::int AS n FROM billing_rules')).toEqual([{ n: 0 }]);
    });

    it('a platform admin inserts a rule and soft-deletes it', async () => {
      const { id } = (await as(platformAdmin, `INSERT INTO billing_rules (rule_key, value) VALUES ('runBaseMilli', '7') RETURNING id`))[0]!;
      expect(await as(platformAdmin, `UPDATE billing_rules SET deleted_at = now() WHERE id = $1 RETURNING id`, [id])).toEqual([{ id }]);
      expect((await service('SELECT deleted_at FROM billing_rules WHERE id = $1', [id]))[0]!.deleted_at).toBeInstanceOf(Date);
    });

    it('a team owner cannot insert or update, and DELETE is refused even to a platform admin; nothing changes', async () => {
      const before = await service('SELECT * FROM billing_rules ORDER BY id');
      expect(await refusal(as(a.owner, `INSERT INTO billing_rules (rule_key, value) VALUES ('runBaseMilli', '1')`))).toEqual(rlsViolation('billing_rules'));
      expect(await as(a.owner, `UPDATE billing_rules SET value = '0' WHERE rule_key = $1 RETURNING id`, [ruleKey])).toEqual([]);
      expect(await refusal(as(platformAdmin, 'DELETE FROM billing_rules WHERE rule_key = $1', [ruleKey]))).toEqual(denied('billing_rules'));
      expect(await refusal(as(a.owner, 'DELETE FROM billing_rules'))).toEqual(denied('billing_rules'));
      expect(await service('SELECT * FROM billing_rules ORDER BY id')).toEqual(before);
    });
  });

  describe('model_provider_costs and site_settings: platform admins only', () => {
    it('a platform admin reads, upserts on (provider, model) and deletes model costs', async () => {
      expect(await as(platformAdmin, 'SELECT id FROM model_provider_costs WHERE id = $1', [costId])).toEqual([{ id: costId }]);
      const model = `m-${randomUUID()}`;
      const upsert = `INSERT INTO model_provider_costs (provider, model, input_cost_per_mtok, output_cost_per_mtok) VALUES ('q', $1, $2, 1)
        ON CONFLICT (provider, model) DO UPDATE SET input_cost_per_mtok = excluded.input_cost_per_mtok RETURNING id, input_cost_per_mtok`;
      const first = (await as(platformAdmin, upsert, [model, 3]))[0]!;
      expect(await as(platformAdmin, upsert, [model, 4])).toEqual([{ id: first.id, input_cost_per_mtok: '4.000000' }]);
      expect(await as(platformAdmin, 'DELETE FROM model_provider_costs WHERE id = $1 RETURNING id', [first.id])).toEqual([{ id: first.id }]);
    });

    it('a platform admin reads and writes site settings', async () => {
      expect(await as(platformAdmin, `SELECT key FROM site_settings WHERE key = 'run.max_timeout_seconds'`)).toHaveLength(1);
      await as(platformAdmin, `INSERT INTO site_settings (key, value) VALUES ('data_api.test', '1') ON CONFLICT (key) DO UPDATE SET value = excluded.value`);
      expect(await as(platformAdmin, `DELETE FROM site_settings WHERE key = 'data_api.test' RETURNING key`)).toEqual([{ key: 'data_api.test' }]);
    });

    it('team owners and the anon key read nothing and change nothing', async () => {
      const before = [await service('SELECT * FROM model_provider_costs ORDER BY id'), await service('SELECT * FROM site_settings ORDER BY key')];
      for (const reader of [a.owner, null]) {
        expect(await as(reader, 'SELECT count(*)::int AS n FROM model_provider_costs')).toEqual([{ n: 0 }]);
        expect(await as(reader, 'SELECT count(*)::int AS n FROM site_settings')).toEqual([{ n: 0 }]);
      }
      expect(await refusal(as(a.owner, `INSERT INTO model_provider_costs (provider, model, input_cost_per_mtok, output_cost_per_mtok) VALUES ('p', 'x', 0, 0)`))).toEqual(rlsViolation('model_provider_costs'));
      expect(await as(a.owner, 'UPDATE model_provider_costs SET input_cost_per_mtok = 0 RETURNING id')).toEqual([]);
      expect(await as(a.owner, 'DELETE FROM model_provider_costs RETURNING id')).toEqual([]);
      expect(await refusal(as(a.owner, `INSERT INTO site_settings (key, value) VALUES ('run.max_timeout_seconds', '1')`))).toEqual(rlsViolation('site_settings'));
      expect(await as(a.owner, 'DELETE FROM site_settings RETURNING key')).toEqual([]);
      expect(await refusal(as(null, `DELETE FROM site_settings`))).toEqual(denied('site_settings'));
      expect([await service('SELECT * FROM model_provider_costs ORDER BY id'), await service('SELECT * FROM site_settings ORDER BY key')]).toEqual(before);
    });
  });

  it('grants: a user reads their own OAuth grants only, whatever the filter', async () => {
    const own = await as(a.member, 'SELECT user_id, app_id, scopes FROM grants');
    expect(own).toHaveLength(1);
    expect(own[0]).toMatchObject({ user_id: a.member, scopes: ['profile'] });
    expect(await as(a.member, 'SELECT id FROM grants WHERE user_id = $1', [b.member])).toEqual([]);
    expect(await as(a.owner, 'SELECT id FROM grants')).toEqual([]);
    expect(await as(null, 'SELECT id FROM grants')).toEqual([]);
  });

  describe('audit_logs: members insert as themselves; only admins read, through audit_logs_with_names', () => {
    it('a member of A writes an audit row for A, as themselves', async () => {
      const target = randomUUID();
      await as(a.member, `INSERT INTO audit_logs (team_id, action, target_type, target_id, metadata) VALUES ($1, 'doc.viewed', 'document', $2, '{"via":"web"}')`, [a.team, target]);
      expect(await service('SELECT actor_id, metadata FROM audit_logs WHERE target_id = $1', [target])).toEqual([{ actor_id: a.member, metadata: { via: 'web' } }]);
    });

    it('inserting as someone else, into team B, or by the anon key is refused; nobody reads audit_logs directly; nothing changes', async () => {
      const before = await service('SELECT count(*)::int AS n FROM audit_logs');
      expect(await refusal(as(a.member, `INSERT INTO audit_logs (team_id, actor_id, action) VALUES ($1, $2, 'forged')`, [a.team, a.owner]))).toEqual(rlsViolation('audit_logs'));
      expect(await refusal(as(a.member, `INSERT INTO audit_logs (team_id, action) VALUES ($1, 'intrude')`, [b.team]))).toEqual(rlsViolation('audit_logs'));
      expect(await refusal(as(null, `INSERT INTO audit_logs (team_id, actor_id, action) VALUES ($1, $2, 'anon')`, [a.team, a.owner]))).toEqual(denied('audit_logs'));
      expect(await refusal(as(a.owner, 'SELECT id FROM audit_logs'))).toEqual(denied('audit_logs'));
      expect(await refusal(as(a.owner, 'DELETE FROM audit_logs'))).toEqual(denied('audit_logs'));
      expect(await service('SELECT count(*)::int AS n FROM audit_logs')).toEqual(before);
    });

    it('audit_logs_with_names shows A\'s admins A\'s rows with the actor\'s name and email, and nobody else anything', async () => {
      const owner = (await service('SELECT name, email FROM users WHERE id = $1', [a.owner]))[0]!;
      for (const reader of [a.owner, a.admin]) {
        const rows = await as(reader, 'SELECT id, team_id, actor_name, actor_email FROM audit_logs_with_names WHERE id = $1 OR true', [b.audit]);
        expect(new Set(rows.map((r) => r.team_id))).toEqual(new Set([a.team]));
        expect(rows.find((r) => r.id === a.audit)).toEqual({ id: a.audit, team_id: a.team, actor_name: owner.name, actor_email: owner.email });
      }
      for (const reader of [a.member, a.agentUser, b.owner, outsider, platformAdmin, null]) {
        expect(await as(reader, 'SELECT id FROM audit_logs_with_names WHERE team_id = $1', [a.team])).toEqual([]);
      }
      // A view over a join is not updatable at all (55000), whoever asks.
      expect(await refusal(as(a.owner, `UPDATE audit_logs_with_names SET action = 'x'`))).toMatchObject({ code: '55000' });
    });
  });

  describe('romp_messages: both parties of a binding read; each posts as its switch allows', () => {
    const count = async () => (await service('SELECT count(*)::int AS n FROM romp_messages'))[0]!.n;

    it('the owner and the agent read their binding\'s messages; nobody else does, whatever the filter', async () => {
      for (const party of [a.member, a.agentUser]) {
        expect(await as(party, 'SELECT id FROM romp_messages WHERE binding_id = $1 OR binding_id = $2', [a.binding, b.binding])).toEqual([{ id: a.message }]);
      }
      for (const other of [a.owner, a.admin, b.member, b.agentUser, outsider, null]) {
        expect(await as(other, 'SELECT id FROM romp_messages WHERE binding_id = $1', [a.binding])).toEqual([]);
      }
    });

    it('the agent posts while can_send, the owner while can_receive', async () => {
      await as(a.agentUser, `INSERT INTO romp_messages (binding_id, body) VALUES ($1, 'from agent')`, [a.binding]);
      await as(a.member, `INSERT INTO romp_messages (binding_id, sender_user_id, body) VALUES ($1, $2, 'from owner')`, [a.binding, a.member]);
      expect(await service('SELECT sender_user_id, body FROM romp_messages WHERE binding_id = $1 AND body LIKE $2 ORDER BY body', [a.binding, 'from %']))
        .toEqual([{ sender_user_id: a.agentUser, body: 'from agent' }, { sender_user_id: a.member, body: 'from owner' }]);
    });

    it('a switch off, a sender who is not the caller, a third party or a revoked binding are refused; nothing changes', async () => {
      const before = await count();
      const post = (user: string | null, sender: string | null) =>
        refusal(as(user, `INSERT INTO romp_messages (binding_id, sender_user_id, body) VALUES ($1, coalesce($2::uuid, auth.uid()), 'no')`, [a.binding, sender]));
      await service('UPDATE agent_bindings SET can_send = false, can_receive = false WHERE id = $1', [a.binding]);
      expect(await post(a.agentUser, null)).toEqual(rlsViolation('romp_messages'));
      expect(await post(a.member, null)).toEqual(rlsViolation('romp_messages'));
      await service('UPDATE agent_bindings SET can_send = true, can_receive = true WHERE id = $1', [a.binding]);
      expect(await post(a.member, a.agentUser)).toEqual(rlsViolation('romp_messages'));
      expect(await post(a.owner, null)).toEqual(rlsViolation('romp_messages'));
      expect(await post(b.member, null)).toEqual(rlsViolation('romp_messages'));
      expect(await post(null, a.member)).toEqual(denied('romp_messages'));
      await service('UPDATE agent_bindings SET revoked_at = now() WHERE id = $1', [a.binding]);
      expect(await post(a.member, null)).toEqual(rlsViolation('romp_messages'));
      await service('UPDATE agent_bindings SET revoked_at = NULL WHERE id = $1', [a.binding]);
      expect(await refusal(as(a.member, 'DELETE FROM romp_messages WHERE binding_id = $1', [a.binding]))).toEqual(denied('romp_messages'));
      expect(await count()).toBe(before);
    });
  });

  describe('assets_sessions and assets_items: members insert and update in their team', () => {
    it('a member of A (and A\'s agent) opens a session in A\'s project, adds A\'s file, and updates them', async () => {
      for (const writer of [a.member, a.agentUser]) {
        const session = (await as(writer, `INSERT INTO assets_sessions (team_id, project_id) VALUES ($1, $2) RETURNING id, created_by, status`, [a.team, a.project]))[0]!;
        expect(session).toMatchObject({ created_by: writer, status: 'active' });
        const item = (await as(writer, `INSERT INTO assets_items (session_id, file_id) VALUES ($1, $2) RETURNING id, team_id, project_id`, [session.id, a.file]))[0]!;
        expect(item).toMatchObject({ team_id: a.team, project_id: a.project });
        expect(await as(writer, `UPDATE assets_items SET status = 'ready' WHERE id = $1 RETURNING status`, [item.id])).toEqual([{ status: 'ready' }]);
        expect(await as(writer, `UPDATE assets_sessions SET status = 'completed' WHERE id = $1 RETURNING status`, [session.id])).toEqual([{ status: 'completed' }]);
      }
    });

    it('B\'s team, project, session or file, another creator, and another team\'s update are refused; nothing changes', async () => {
      const snapshot = () => service(`SELECT (SELECT count(*) FROM assets_sessions) AS s, (SELECT count(*) FROM assets_items) AS i,
        (SELECT status FROM assets_sessions WHERE id = $1) AS bs, (SELECT status FROM assets_items WHERE id = $2) AS bi`, [b.session, b.item]);
      const before = await snapshot();
      expect(await refusal(as(a.member, 'INSERT INTO assets_sessions (team_id, project_id) VALUES ($1, $2)', [b.team, b.project]))).toEqual(rlsViolation('assets_sessions'));
      expect(await refusal(as(a.member, 'INSERT INTO assets_sessions (team_id, project_id) VALUES ($1, $2)', [a.team, b.project]))).toEqual(rlsViolation('assets_sessions'));
      expect(await refusal(as(a.member, 'INSERT INTO assets_sessions (team_id, project_id, created_by) VALUES ($1, $2, $3)', [a.team, a.project, a.owner]))).toEqual(rlsViolation('assets_sessions'));
      expect(await refusal(as(a.member, 'INSERT INTO assets_items (session_id, team_id, project_id) VALUES ($1, $2, $3)', [b.session, b.team, b.project]))).toEqual(rlsViolation('assets_items'));
      expect(await refusal(as(a.member, 'INSERT INTO assets_items (session_id, file_id) VALUES ($1, $2)', [a.session, b.file]))).toEqual(rlsViolation('assets_items'));
      expect(await refusal(as(a.member, 'UPDATE assets_items SET file_id = $2 WHERE id = $1', [a.item, b.file]))).toEqual(rlsViolation('assets_items'));
      expect(await as(a.member, `UPDATE assets_sessions SET status = 'hacked' WHERE id = $1 OR true RETURNING team_id`, [b.session]).then((rows) => rows.every((r) => r.team_id === a.team))).toBe(true);
      expect(await as(a.member, `UPDATE assets_items SET status = 'hacked' WHERE id = $1 RETURNING id`, [b.item])).toEqual([]);
      expect(await refusal(as(a.member, 'UPDATE assets_sessions SET team_id = $2 WHERE id = $1', [a.session, b.team]))).toEqual(denied('assets_sessions'));
      expect(await refusal(as(a.member, 'DELETE FROM assets_items WHERE id = $1', [a.item]))).toEqual(denied('assets_items'));
      expect(await refusal(as(null, 'INSERT INTO assets_sessions (team_id, project_id) VALUES ($1, $2)', [a.team, a.project]))).toEqual(denied('assets_sessions'));
      const after = await snapshot();
      expect(after).toEqual(before);
    });
  });

  describe('RPCs', () => {
    it('get_usage_heatmap: members of the team get UTC days with runs and credits spent', async () => {
      await service(`INSERT INTO credit_transactions (id, team_id, amount_milli, reason, created_at) VALUES (gen_random_uuid(), $1, -250, 'run', now())`, [a.team]);
      const today = new Date().toISOString().slice(0, 10);
      for (const reader of [a.member, a.agentUser]) {
        expect(await as(reader, 'SELECT * FROM get_usage_heatmap($1)', [a.team])).toEqual([{ day: today, runs: 1, credits_milli: 250 }]);
      }
      expect(await as(a.owner, 'SELECT * FROM get_usage_heatmap(p_team_id => $1, p_days => 1)', [a.team])).toHaveLength(1);
    });

    it('get_usage_heatmap: another team\'s members, outsiders and the anon key get 42501; a bad p_days 22023', async () => {
      for (const reader of [b.owner, outsider, platformAdmin, null]) {
        expect(await refusal(as(reader, 'SELECT * FROM get_usage_heatmap($1)', [a.team]))).toEqual({ code: '42501', message: `permission denied for team ${a.team}` });
      }
      expect(await refusal(as(a.member, 'SELECT * FROM get_usage_heatmap($1, 0)', [a.team]))).toEqual({ code: '22023', message: 'p_days must be between 1 and 366' });
    });

    it('delete_api_key: a member (42501), another team\'s admin and a missing key (P0002) change nothing', async () => {
      const before = await service('SELECT id, deleted_at FROM api_keys ORDER BY id');
      expect(await refusal(as(a.member, 'SELECT delete_api_key($1)', [a.key]))).toEqual({ code: '42501', message: 'only the team owner or admin can delete an API key' });
      expect(await refusal(as(b.admin, 'SELECT delete_api_key($1)', [a.key]))).toEqual({ code: 'P0002', message: 'API key not found' });
      expect(await refusal(as(a.admin, 'SELECT delete_api_key($1)', [randomUUID()]))).toEqual({ code: 'P0002', message: 'API key not found' });
      expect(await refusal(as(null, 'SELECT delete_api_key($1)', [a.key]))).toEqual({ code: 'P0002', message: 'API key not found' });
      expect(await service('SELECT id, deleted_at FROM api_keys ORDER BY id')).toEqual(before);
    });

    it('delete_api_key: an admin soft-deletes their team\'s key and the HTTP API refuses it at once', async () => {
      const make = credentialFactory(stack);
      const { id, token } = await make.apiKey(a.team, a.owner);
      const projects = () => stack.app.inject({ method: 'GET', url: `/teams/${a.team}/projects`, headers: { authorization: `Bearer ${token}` } });
      expect((await projects()).statusCode).toBe(200);
      await as(a.admin, 'SELECT delete_api_key($1)', [id]);
      expect((await service('SELECT deleted_at FROM api_keys WHERE id = $1', [id]))[0]!.deleted_at).toBeInstanceOf(Date);
      expect((await projects()).statusCode).toBe(401);
    });
  });

  describe('the service\'s own connection', () => {
    it('owns every secured relation, which has RLS enabled but not forced, so it reads all teams\' rows', async () => {
      const tables = await service(`SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, pg_get_userbyid(c.relowner) = current_user AS owned
        FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' AND c.relrowsecurity`);
      expect(tables.length).toBeGreaterThanOrEqual(20);
      expect(tables.filter((t) => t.relforcerowsecurity || !t.owned)).toEqual([]);
      expect(await service('SELECT count(DISTINCT team_id)::int AS n FROM runs WHERE team_id = ANY($1)', [[a.team, b.team]])).toEqual([{ n: 2 }]);
    });

    it('its plans carry no policy: a run lookup by team is the same index scan as before', async () => {
      const plan = (await service('EXPLAIN (COSTS OFF) SELECT * FROM runs WHERE team_id = $1', [a.team])).map((r) => r['QUERY PLAN']).join('\n');
      expect(plan).toContain('runs_team_idx');
      expect(plan).not.toMatch(/access_|auth\.|SubPlan|InitPlan/);
    });

    it('runs.project_id: the run path writes the deployment\'s project; any other insert gets it from the deployment', async () => {
      expect(await service('SELECT project_id FROM runs WHERE id = $1', [a.run])).toEqual([{ project_id: a.project }]);
      const id = randomUUID();
      await service(`INSERT INTO runs (id, deployment_id, document_id, team_id, trigger_source, inputs) VALUES ($1, $2, $3, $4, 'api', '{}')`, [id, b.deployment, b.document, b.team]);
      expect(await service('SELECT project_id FROM runs WHERE id = $1', [id])).toEqual([{ project_id: b.project }]);
    });
  });
});
