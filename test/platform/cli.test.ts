import { createLocalJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../shared/crypto.js';
import { hasValidTokenShape } from '../../shared/credentials/tokens.js';
import { runCli } from '../harness/cli.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

const TABLES = ['users', 'teams', 'team_members', 'projects', 'site_settings', 'credit_balances', 'credit_transactions', 'api_keys'] as const;

describe('operator CLI', () => {
  let stack: TestStack;
  const cli = (...args: string[]) => runCli(args, stack.env);
  const rowCounts = async () => Object.fromEntries(await Promise.all(TABLES.map(async (t) => {
    const { n } = await stack.db.selectFrom(t).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return [t, n] as const;
  })));

  beforeAll(async () => { stack = await createTestStack(); });
  afterAll(() => stack?.close());

  it('builds a tenant end to end, printing one JSON object per command', async () => {
    const user = await cli('user', 'create', '--email', 'Ada@Example.com', '--name', 'Ada', '--phone', '+8613800138000');
    expect(user.code).toBe(0);
    expect(user.json).toEqual({ id: expect.any(String), email: 'ada@example.com' });
    const userId = user.json!.id as string;

    const team = await cli('team', 'create', '--owner', userId, '--name', 'Analytical Engines', '--plan', 'pro');
    expect(team.json).toEqual({ id: expect.any(String), slug: expect.stringMatching(/^analytical-engines-[0-9a-f]{6}$/), name: 'Analytical Engines', planCode: 'pro' });
    const teamId = team.json!.id as string;
    const owner = await stack.db.selectFrom('team_members').selectAll().where('team_id', '=', teamId).execute();
    expect(owner).toEqual([expect.objectContaining({ user_id: userId, role: 'owner' })]);

    const other = await cli('user', 'create', '--email', 'charles@example.com');
    const member = await cli('team', 'add-member', '--team', teamId, '--user', other.json!.id as string, '--role', 'admin');
    expect(member.json).toEqual({ teamId, userId: other.json!.id, role: 'admin' });

    const project = await cli('project', 'create', '--team', teamId, '--name', 'Difference Engine');
    expect(project.json).toEqual({ id: expect.any(String), slug: 'difference-engine', teamId });
    const again = await cli('project', 'create', '--team', teamId, '--name', 'Difference Engine');
    expect(again.json!.slug).toMatch(/^difference-engine-[0-9a-f]{6}$/);

    const granted = await cli('credits', 'grant', '--team', teamId, '--amount', '2500');
    expect(granted.json).toEqual({ teamId, balance: 2500 });
    const more = await cli('credits', 'grant', '--team', teamId, '--amount', '500');
    expect(more.json).toEqual({ teamId, balance: 3000 });
    const ledger = await stack.db.selectFrom('credit_transactions').select('amount_milli').where('team_id', '=', teamId).orderBy('created_at').execute();
    expect(ledger.map((r) => r.amount_milli)).toEqual([2500, 500]);

    const key = await cli('api-key', 'create', '--team', teamId, '--user', userId, '--name', 'ci', '--limit-credits', '100');
    expect(key.json).toEqual({ id: expect.any(String), token: expect.stringMatching(/^wfk-/) });
    expect(hasValidTokenShape('apiKey', key.json!.token as string)).toBe(true);
    const stored = await stack.db.selectFrom('api_keys').selectAll().where('id', '=', key.json!.id as string).executeTakeFirstOrThrow();
    expect(stored.key_hash).toBe(sha256Hex(key.json!.token as string));
    expect(stored.limit_credits).toBe(100);

    const jwt = await cli('jwt', 'issue', '--user', userId, '--ttl', '120');
    const jwks = (await stack.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
    const { payload } = await jwtVerify(jwt.json!.token as string, createLocalJWKSet(jwks), { issuer: stack.config.JWT_ISSUER, audience: stack.config.JWT_AUDIENCE });
    expect(payload.sub).toBe(userId);
    expect(payload.exp! - payload.iat!).toBe(120);
  });

  it('credits balance prints a granted team\'s balance in milli-credits; an unknown team exits 2 with team_not_found', async () => {
    const owner = await cli('user', 'create', '--email', 'balance-owner@example.com');
    const team = await cli('team', 'create', '--owner', owner.json!.id as string, '--name', 'Balances');
    const teamId = team.json!.id as string;
    await cli('credits', 'grant', '--team', teamId, '--amount', '1750');
    const balance = await cli('credits', 'balance', '--team', teamId);
    expect(balance.code).toBe(0);
    expect(balance.json).toEqual({ teamId, balance: 1750 });
    const stored = await stack.db.selectFrom('credit_balances').select('balance_milli').where('team_id', '=', teamId).executeTakeFirstOrThrow();
    expect(Number(stored.balance_milli)).toBe(1750);

    const before = await rowCounts();
    const unknown = await cli('credits', 'balance', '--team', '00000000-0000-4000-8000-000000000000');
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe('');
    expect(unknown.error).toEqual({ error: 'team_not_found', message: 'Team 00000000-0000-4000-8000-000000000000 does not exist' });
    expect(await rowCounts()).toEqual(before);
  }, 60_000);

  it('settings set stores the JSON value', async () => {
    const res = await cli('settings', 'set', '--key', 'run.max_timeout_seconds', '--value', '120');
    expect(res.json).toEqual({ key: 'run.max_timeout_seconds', value: 120 });
    const row = await stack.db.selectFrom('site_settings').select('value').where('key', '=', 'run.max_timeout_seconds').executeTakeFirstOrThrow();
    expect(row.value).toBe(120);
  });

  it('settings set refuses a value its schema refuses: exit 2 naming the problem, nothing stored', async () => {
    expect((await cli('settings', 'set', '--key', 'webhook_trigger.rate_limit', '--value', '{"perMinute":30}')).code).toBe(0);
    const res = await cli('settings', 'set', '--key', 'webhook_trigger.rate_limit', '--value', '{"perMinute":-5}');
    expect(res.code).toBe(2);
    expect(res.error).toMatchObject({ error: 'invalid_value' });
    expect(String(res.error!.message)).toMatch(/^Invalid --value for webhook_trigger\.rate_limit: perMinute: /);
    const row = await stack.db.selectFrom('site_settings').select('value').where('key', '=', 'webhook_trigger.rate_limit').executeTakeFirstOrThrow();
    expect(row.value).toEqual({ perMinute: 30 });
  });

  it('refuses a duplicate email', async () => {
    await cli('user', 'create', '--email', 'dup@example.com');
    const before = await rowCounts();
    const res = await cli('user', 'create', '--email', 'DUP@example.com');
    expect(res.code).toBe(1);
    expect(res.error).toMatchObject({ error: 'email_taken' });
    expect(await rowCounts()).toEqual(before);
  });

  it('doctor runs the probe workflow through a worker', async () => {
    await stack.startWorker();
    const res = await cli('doctor');
    expect(res.code).toBe(0);
    expect(res.json).toMatchObject({ ok: true, probeId: expect.any(String) });
    const row = await stack.db.selectFrom('platform_probes').select('note').where('id', '=', res.json!.probeId as string).executeTakeFirst();
    expect(row).toEqual({ note: 'cli doctor' });
  });

  // Concurrent: none of these may write, so their before/after row counts cannot disturb each other.
  describe.concurrent('bad input: non-zero exit, a message naming the flag, nothing written', () => {
    const cases: Array<[string, string[], RegExp | string]> = [
      ['missing --email', ['user', 'create', '--name', 'x'], 'Missing required flag --email'],
      ['malformed --email', ['user', 'create', '--email', 'not-an-email'], /^Invalid --email/],
      ['malformed --phone', ['user', 'create', '--email', 'p@example.com', '--phone', '12345'], /^Invalid --phone/],
      ['malformed --owner', ['team', 'create', '--owner', 'nope', '--name', 'T'], /^Invalid --owner: expected a UUID/],
      ['unknown --plan', ['team', 'create', '--owner', '00000000-0000-4000-8000-000000000000', '--name', 'T', '--plan', 'gold'], /^Invalid --plan/],
      ['flag without a value', ['team', 'create', '--owner'], 'Flag --owner needs a value'],
      ['unknown flag', ['project', 'create', '--team', '00000000-0000-4000-8000-000000000000', '--name', 'P', '--colour', 'red'], /^Unknown flag --colour/],
      ['bad --role', ['team', 'add-member', '--team', '00000000-0000-4000-8000-000000000000', '--user', '00000000-0000-4000-8000-000000000000', '--role', 'king'], /^Invalid --role/],
      ['zero --amount', ['credits', 'grant', '--team', '00000000-0000-4000-8000-000000000000', '--amount', '0'], /^Invalid --amount/],
      ['fractional --amount', ['credits', 'grant', '--team', '00000000-0000-4000-8000-000000000000', '--amount', '1.5'], /^Invalid --amount/],
      ['--value not JSON', ['settings', 'set', '--key', 'k', '--value', '{oops'], /^Invalid --value: not valid JSON/],
      ['malformed --ttl', ['jwt', 'issue', '--user', '00000000-0000-4000-8000-000000000000', '--ttl', 'soon'], /^Invalid --ttl/],
      ['unknown command', ['team', 'explode'], /^Unknown command 'team explode'/],
      // A three-word command is found (it once answered unknown_command): its own check speaks.
      ['three-word command, bad flag', ['chan-a', 'account', 'set', '--client-id', 'c', '--app-id', 'wx!', '--app-secret', 's'], /^Invalid --app-id/],
    ];
    it.each(cases)('%s', async (_name, args, message) => {
      const before = await rowCounts();
      const res = await cli(...args);
      expect(res.code).not.toBe(0);
      expect(res.stdout).toBe('');
      expect(res.error).toMatchObject({ error: expect.any(String), message: typeof message === 'string' ? message : expect.stringMatching(message) });
      expect(await rowCounts()).toEqual(before);
    });

    it('refuses references to rows that do not exist, leaving no half-written team', async () => {
      const before = await rowCounts();
      const team = await cli('team', 'create', '--owner', '00000000-0000-4000-8000-000000000000', '--name', 'Orphan');
      expect(team.code).toBe(1);
      expect(team.error).toEqual({ error: 'not_found', message: 'User 00000000-0000-4000-8000-000000000000 not found' });
      const grant = await cli('credits', 'grant', '--team', '00000000-0000-4000-8000-000000000000', '--amount', '5');
      expect(grant.error).toMatchObject({ error: 'not_found' });
      expect(await rowCounts()).toEqual(before);
    });

  });
});
