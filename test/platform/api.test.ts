import { Connection, type WorkflowHandle } from '@temporalio/client';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.js';
import { createDb, executePrepared } from '../../shared/db/client.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { readinessWorkflowId } from '../../temporal/readiness.js';

const countSignals = async (handle: WorkflowHandle) =>
  (await handle.fetchHistory()).events!.filter((event) => event.workflowExecutionSignaledEventAttributes).length;

describe('API skeleton', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack();
    // A real route with a body, to exercise parsing and limits the way later route groups will.
    stack.app.post('/test/echo', async (request) => ({ received: request.body }));
  });
  afterAll(() => stack?.close());

  it('GET /healthz answers while the process is up', async () => {
    const res = await stack.app.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('GET /readyz is 200 when PostgreSQL and Temporal answer', async () => {
    const res = await stack.app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ready', checks: { postgres: 'ok', temporal: 'ok' }, failed: [] });
  });

  it('GET /readyz proves Temporal can write: it signals the hour\'s readiness execution', async () => {
    const handle = stack.deps.temporal.client.workflow.getHandle(readinessWorkflowId());
    const signalsBefore = await countSignals(handle).catch(() => 0);
    expect((await stack.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    expect(await countSignals(handle)).toBeGreaterThan(signalsBefore);
    expect((await handle.describe()).status.name).toBe('RUNNING');
  });

  it('GET /readyz is 503 when Temporal answers reads but cannot start work', async () => {
    // The frontend answers GetSystemInfo for any namespace; a write to one that does not exist fails,
    // as every write does on a server whose store is locked.
    const app = await buildApp({ ...stack.deps, config: { ...stack.deps.config, TEMPORAL_NAMESPACE: 'no-such-namespace' } }, { logger: false });
    try {
      await stack.deps.temporal.connection.workflowService.getSystemInfo({});
      const res = await app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ status: 'unavailable', failed: ['temporal'], checks: { postgres: 'ok' } });
      expect(res.json().checks.temporal).toMatch(/^unreachable: .*no-such-namespace/);
    } finally {
      await app.close();
    }
  });

  it('GET /readyz is 503 naming Temporal when Temporal is unreachable', async () => {
    // No retry interceptor: the default one would keep retrying after the test closed the channel.
    const connection = await Connection.lazy({ address: '127.0.0.1:1', connectTimeout: '1 second', interceptors: [] });
    const app = await buildApp({ ...stack.deps, temporal: { ...stack.deps.temporal, connection } }, { logger: false });
    try {
      const res = await app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(503);
      const body = res.json();
      expect(body.status).toBe('unavailable');
      expect(body.failed).toEqual(['temporal']);
      expect(body.checks.postgres).toBe('ok');
      expect(body.checks.temporal).toMatch(/^unreachable: /);
    } finally {
      await app.close();
      await connection.close();
    }
  });

  it('GET /readyz is 503 naming PostgreSQL when the database is unreachable', async () => {
    const db = createDb('postgres://postgres:x@127.0.0.1:1/none', { poolSize: 1 });
    const app = await buildApp({ ...stack.deps, db }, { logger: false });
    try {
      const res = await app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ status: 'unavailable', failed: ['postgres'], checks: { temporal: 'ok' } });
    } finally {
      await app.close();
      await db.destroy();
    }
  });

  it('survives PostgreSQL dropping its idle connections (restart, failover)', async () => {
    const db = createDb(stack.databaseUrl, { poolSize: 2, applicationName: 'drop-me' });
    const app = await buildApp({ ...stack.deps, db }, { logger: false });
    try {
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
      const { rows } = await sql<{ n: number }>`SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = 'drop-me'`.execute(stack.db);
      expect(rows[0]!.n).toBeGreaterThan(0);
      await new Promise((r) => setTimeout(r, 100));
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    } finally {
      await app.close();
      await db.destroy();
    }
  });

  it('executePrepared: a named statement per pooled connection, and inside a transaction the transaction itself', async () => {
    const db = createDb(stack.databaseUrl, { poolSize: 1, applicationName: 'prepared-test' });
    try {
      const query = (n: number) => sql<{ doubled: number }>`SELECT ${n}::int * 2 AS doubled`.compile(db);
      for (const n of [1, 2, 3]) expect(await executePrepared(db, 'test_doubled', query(n))).toEqual([{ doubled: n * 2 }]);
      const { rows } = await sql<{ names: string[] }>`SELECT coalesce(array_agg(name::text), '{}') AS names FROM pg_prepared_statements`.execute(db);
      expect(rows[0]!.names).toEqual(['test_doubled']);
      // A transaction is not the pool: the statement runs on it and sees its uncommitted writes.
      await db.transaction().execute(async (trx) => {
        await sql`CREATE TEMP TABLE prepared_probe (n int) ON COMMIT DROP`.execute(trx);
        await sql`INSERT INTO prepared_probe VALUES (7)`.execute(trx);
        expect(await executePrepared(trx, 'test_probe', sql<{ n: number }>`SELECT n FROM prepared_probe`.compile(trx))).toEqual([{ n: 7 }]);
      });
    } finally {
      await db.destroy();
    }
  });

  it('an unknown route is a 404 JSON error', async () => {
    const res = await stack.app.inject({ method: 'GET', url: '/no/such/route?x=1' });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    expect(res.json()).toEqual({ error: 'not_found', message: 'Route GET /no/such/route not found' });
  });

  it('a malformed JSON body is a 400 that names the problem', async () => {
    const res = await stack.app.inject({ method: 'POST', url: '/test/echo', headers: { 'content-type': 'application/json' }, payload: '{"a": ' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid_json', message: expect.stringMatching(/^Malformed JSON body: .*not valid JSON/) });
  });

  it('a body over the size limit is a 413', async () => {
    const payload = JSON.stringify({ blob: 'x'.repeat(stack.config.BODY_LIMIT_BYTES) });
    const res = await stack.app.inject({ method: 'POST', url: '/test/echo', headers: { 'content-type': 'application/json' }, payload });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ error: 'request_body_too_large' });
  });

  it('a body within the limit reaches the route', async () => {
    const res = await stack.app.inject({ method: 'POST', url: '/test/echo', payload: { hello: 'world' } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ received: { hello: 'world' } });
  });

  it('keeps a sane caller request id and makes one up otherwise', async () => {
    const kept = await stack.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'trace-123' } });
    expect(kept.headers['x-request-id']).toBe('trace-123');
    const replaced = await stack.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'bad id with spaces' } });
    expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('serves the OpenAPI 3 document generated from the route schemas, and the docs UI', async () => {
    const json = await stack.app.inject({ method: 'GET', url: '/docs/json' });
    expect(json.statusCode).toBe(200);
    const doc = json.json();
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.paths['/readyz'].get.responses['503']).toBeDefined();
    expect(doc.paths['/.well-known/jwks.json']).toBeDefined();
    const ui = await stack.app.inject({ method: 'GET', url: '/docs/' });
    expect(ui.statusCode).toBe(200);
    expect(ui.headers['content-type']).toMatch(/text\/html/);
  });

  it('exposes Prometheus metrics with request latency by route template', async () => {
    await stack.app.inject({ method: 'GET', url: '/healthz' });
    const res = await stack.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toMatch(/http_request_duration_seconds_count\{method="GET",route="\/healthz",status_code="200"\} \d+/);
    expect(res.body).toContain('process_cpu_user_seconds_total');
  });

  it('publishes the development IdP key, and tokens it issues verify against it', async () => {
    const res = await stack.app.inject({ method: 'GET', url: '/.well-known/jwks.json' });
    expect(res.statusCode).toBe(200);
    const jwks = res.json();
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({ kty: 'EC', alg: 'ES256', use: 'sig', kid: expect.any(String) });
    expect(jwks.keys[0].d).toBeUndefined();
    const token = await stack.deps.idp.issue('00000000-0000-4000-8000-000000000001', 60);
    const { payload } = await jwtVerify(token, createLocalJWKSet(jwks), {
      issuer: stack.config.JWT_ISSUER, audience: stack.config.JWT_AUDIENCE,
    });
    expect(payload.sub).toBe('00000000-0000-4000-8000-000000000001');
  });

  it('drains an in-flight request on shutdown, then refuses new ones', async () => {
    const app = await buildApp(stack.deps, { logger: false });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => { entered = resolve; });
    app.get('/test/slow', async () => { entered(); await gate; return { done: true }; });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };

    const inFlight = fetch(`http://127.0.0.1:${port}/test/slow`);
    await inside;
    const closing = app.close();
    // While closing, the listener is gone: a new connection cannot get in.
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
    release();
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(res.headers.get('connection')).toBe('close');
    expect(await res.json()).toEqual({ done: true });
    await closing;
  });
});
