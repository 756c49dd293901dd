import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// "No plaintext token appears in the database or in the logs": use every kind, then grep both.
describe('plaintext tokens never reach the database or the logs', () => {
  let stack: TestStack;
  beforeAll(async () => { stack = await createTestStack(); });
  afterAll(() => stack?.close());

  it('after every credential kind is created and used, at the most verbose log level', async () => {
    let logs = '';
    const sink = new Writable({ write(chunk, _encoding, done) { logs += chunk.toString(); done(); } });
    const app = await buildApp(stack.deps, { logger: { level: 'trace', stream: sink } });
    const make = credentialFactory(stack);
    const owner = await make.user('owner');
    const team = await make.team(owner.id);
    const jwt = await make.jwt(owner.id);
    const created = await app.inject({ method: 'POST', url: `/teams/${team.id}/api-keys`, headers: { authorization: `Bearer ${jwt}` }, payload: { name: 'k' } });
    const tokens = [
      jwt,
      created.json().token as string,
      (await make.apiKey(team.id, owner.id)).token,
      (await make.agentToken(team.id, owner.id, ['GET /my'])).token,
      (await make.oauthToken(owner.id, ['mobile:full'])).token,
      await make.scheduleToken(team.id),
    ];
    for (const token of tokens) {
      await app.inject({ method: 'GET', url: '/my', headers: { authorization: `Bearer ${token}` } });
      await app.inject({ method: 'GET', url: '/my', headers: { 'x-api-key': token } });
      await app.inject({ method: 'POST', url: '/my/default-project/ensure', headers: { authorization: `Bearer ${token}` }, payload: {} });
      await app.inject({ method: 'GET', url: '/my', headers: { authorization: `Bearer ${token}x` } }); // and a failed attempt
    }
    // A team LLM provider key (write-only, stored sealed) is held to the same rule.
    const providerKey = 'sk-provider-plaintext-check-5e6f';
    const provider = await app.inject({
      method: 'PUT', url: `/teams/${team.id}/llm-providers/acme`, headers: { authorization: `Bearer ${jwt}` },
      payload: { baseUrl: 'https://llm.example/v1', apiKey: providerKey },
    });
    expect(provider.statusCode).toBe(200);
    tokens.push(providerKey);
    await app.close();

    expect(logs.length).toBeGreaterThan(1000); // the logger really wrote
    const tables = await sql<{ table_name: string }>`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`.execute(stack.db);
    let dump = '';
    for (const { table_name } of tables.rows) {
      const rows = await sql<{ row: string }>`SELECT row_to_json(t)::text AS row FROM ${sql.table(table_name)} t`.execute(stack.db);
      dump += rows.rows.map((r) => r.row).join('\n');
    }
    expect(dump).toContain(owner.id); // the dump really has content
    for (const token of tokens) {
      expect(dump).not.toContain(token);
      expect(logs).not.toContain(token);
    }
  });
});
