import { randomBytes, randomUUID } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import net from 'node:net';
import { Client, Connection, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { NativeConnection } from '@temporalio/worker';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { checkTemporal } from '../temporal/connection.js';
import { startTemporalDevServer } from '../temporal/dev-server.js';
import { createDb } from './db/client.js';
import {
  dependencyUnavailable, isDatabaseUnavailable, isTemporalUnavailable, TemporalCallTimeout, unavailableDependency,
} from './dependency-errors.js';
import { AppError } from './errors.js';
import { findFreePort } from './ports.js';

// Every error below is produced by the real client library against a real server (or a real
// closed port); the comments record what each one looked like (pg 8.23, @temporalio 1.24, Node 20).

const rejection = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(() => { throw new Error('expected a rejection'); }, (error: unknown) => error);

const adminUrl = () => inject('postgresUrlPattern').replace('{db}', 'postgres');

/** A TCP listener that accepts and then says nothing: a host that is up but whose PostgreSQL hangs. */
async function silentListener() {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => { sockets.add(socket); socket.on('error', () => {}); });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => { for (const s of sockets) s.destroy(); return new Promise<void>((resolve) => server.close(() => resolve())); },
  };
}

/** Forwards to the real PostgreSQL; `reset()` sends RST on every connection, as a failing network does. */
async function resettingProxy(target: URL) {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) { sockets.add(s); s.on('error', () => {}); s.on('close', () => sockets.delete(s)); }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target); url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    reset: () => { for (const s of sockets) s.resetAndDestroy(); },
    close: () => { for (const s of sockets) s.destroy(); return new Promise<void>((resolve) => server.close(() => resolve())); },
  };
}

describe('PostgreSQL unreachable, as node-postgres and Kysely report it', () => {
  it('a closed port: connect ECONNREFUSED, passed through Kysely unwrapped', async () => {
    const db = createDb(`postgres://postgres:x@127.0.0.1:${await findFreePort()}/none`, { poolSize: 1 });
    const error = await rejection(sql`select 1`.execute(db));
    await db.destroy();
    // Error: connect ECONNREFUSED 127.0.0.1:<port> { errno: -111, code: 'ECONNREFUSED', syscall: 'connect', address, port }
    expect(error).toMatchObject({ message: expect.stringMatching(/^connect ECONNREFUSED 127\.0\.0\.1:\d+$/), code: 'ECONNREFUSED', syscall: 'connect' });
    expect([isDatabaseUnavailable(error), isTemporalUnavailable(error), unavailableDependency(error)]).toEqual([true, false, 'postgres']);
  });

  it('a host that accepts but never answers: the pool\'s connection timeout', async () => {
    const listener = await silentListener();
    const pool = new pg.Pool({ connectionString: `postgres://postgres:x@127.0.0.1:${listener.port}/none`, connectionTimeoutMillis: 300 });
    const error = await rejection(pool.query('select 1'));
    await pool.end();
    await listener.close();
    // Error: Connection terminated due to connection timeout { [cause]: Error: Connection terminated unexpectedly } (no code)
    expect(error).toMatchObject({ message: 'Connection terminated due to connection timeout', cause: { message: 'Connection terminated unexpectedly' } });
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it('every pooled connection busy past connectionTimeoutMillis', async () => {
    const pool = new pg.Pool({ connectionString: adminUrl(), connectionTimeoutMillis: 300, max: 1 });
    const held = await pool.connect();
    const error = await rejection(pool.query('select 1'));
    held.release();
    await pool.end();
    // Error: timeout exceeded when trying to connect (no code)
    expect(error).toMatchObject({ message: 'timeout exceeded when trying to connect' });
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it('the backend terminated mid-query (pg_terminate_backend, also what a shutdown does), then the dead client', async () => {
    const pool = new pg.Pool({ connectionString: adminUrl(), max: 2 });
    const admin = new pg.Client({ connectionString: adminUrl() });
    await admin.connect();
    const client = await pool.connect();
    client.on('error', () => {}); // the client also emits the socket's end: "Connection terminated unexpectedly"
    const pid = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
    const inFlight = rejection(client.query('select pg_sleep(30)'));
    await new Promise((r) => setTimeout(r, 100));
    await admin.query('select pg_terminate_backend($1)', [pid]);
    const terminated = await inFlight;
    const next = await rejection(client.query('select 1'));
    client.release(true);
    await pool.end();
    await admin.end();
    // DatabaseError: terminating connection due to administrator command { severity: 'FATAL', code: '57P01', routine: 'ProcessInterrupts' }
    expect(terminated).toMatchObject({ name: 'error', code: '57P01', severity: 'FATAL', message: 'terminating connection due to administrator command' });
    // Error: Connection terminated unexpectedly (no code), or, when the client has already seen the
    // socket end by then, its refusal to query (CI saw both; which one is a race inside node-postgres).
    expect((next as Error).message).toMatch(/^(Connection terminated unexpectedly|Client has encountered a connection error and is not queryable)$/);
    expect([isDatabaseUnavailable(terminated), isDatabaseUnavailable(next)]).toEqual([true, true]);
  });

  it('the network resets the connection, then the dead client refuses queries', async () => {
    const proxy = await resettingProxy(new URL(adminUrl()));
    const client = new pg.Client({ connectionString: proxy.url });
    client.on('error', () => {});
    await client.connect();
    const inFlight = rejection(client.query('select pg_sleep(30)'));
    await new Promise((r) => setTimeout(r, 100));
    proxy.reset();
    const reset = await inFlight;
    const next = await rejection(client.query('select 1'));
    await client.end().catch(() => {});
    await proxy.close();
    // Error: read ECONNRESET { errno: -104, code: 'ECONNRESET', syscall: 'read' }
    expect(reset).toMatchObject({ code: 'ECONNRESET', syscall: 'read' });
    // Error: Client has encountered a connection error and is not queryable (no code)
    expect(next).toMatchObject({ message: 'Client has encountered a connection error and is not queryable' });
    expect([isDatabaseUnavailable(reset), isDatabaseUnavailable(next)]).toEqual([true, true]);
  });

  it('too many connections (53300), here a role\'s connection limit', async () => {
    const role = `limited_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: adminUrl() });
    await admin.connect();
    await admin.query(`create role ${role} login password 'p' connection limit 1`);
    const url = new URL(adminUrl()); url.username = role; url.password = 'p';
    const first = new pg.Client({ connectionString: url.toString() });
    await first.connect();
    const error = await rejection(new pg.Client({ connectionString: url.toString() }).connect());
    await first.end();
    await admin.query(`drop role ${role}`);
    await admin.end();
    // DatabaseError: too many connections for role "limited_…" { severity: 'FATAL', code: '53300', routine: 'InitializeSessionUserId' }
    expect(error).toMatchObject({ code: '53300', severity: 'FATAL' });
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it('node\'s multi-address connect reports an AggregateError; its members are walked', async () => {
    const port = await findFreePort();
    const socket = net.connect({
      host: 'db.invalid', port, autoSelectFamily: true,
      lookup: (_host, _options, callback) => (callback as (e: null, a: LookupAddress[]) => void)(null, [{ address: '127.0.0.1', family: 4 }, { address: '127.0.0.2', family: 4 }]),
    });
    const error = await new Promise<unknown>((resolve) => socket.once('error', resolve));
    // AggregateError { code: 'ECONNREFUSED', errors: [connect ECONNREFUSED 127.0.0.1:…, connect ECONNREFUSED 127.0.0.2:…] }
    expect(error).toBeInstanceOf(AggregateError);
    expect(isDatabaseUnavailable(new Error('wrapped', { cause: Object.assign(error as AggregateError, { code: undefined }) }))).toBe(true);
  });

  it('is not fooled by query errors, our own refusals, or an HTTP peer that is down', async () => {
    const pool = new pg.Pool({ connectionString: adminUrl(), max: 1 });
    const syntax = await rejection(pool.query('selec 1'));
    const missing = await rejection(pool.query('select * from no_such_table'));
    await pool.end();
    // TypeError: fetch failed { [cause]: Error: connect ECONNREFUSED 127.0.0.1:<port> { code: 'ECONNREFUSED' } }
    const fetchFailure = await rejection(fetch(`http://127.0.0.1:${await findFreePort()}/`));
    expect(fetchFailure).toMatchObject({ message: 'fetch failed', cause: { code: 'ECONNREFUSED' } });
    for (const error of [syntax, missing, fetchFailure, new AppError(404, 'not_found'), new Error('boom'), null, undefined, 'ECONNREFUSED']) {
      expect([error, isDatabaseUnavailable(error), isTemporalUnavailable(error)]).toEqual([error, false, false]);
    }
    expect([(syntax as { code: string }).code, (missing as { code: string }).code]).toEqual(['42601', '42P01']);
  });
});

describe('Temporal unreachable, as the SDK reports it', () => {
  it('connecting to a closed port: the native connection and the pure-JS one', async () => {
    const address = `127.0.0.1:${await findFreePort()}`;
    const native = await rejection(NativeConnection.connect({ address }));
    // TransportError: tonic::transport::Error(Transport, ConnectError(ConnectError("tcp connect error", 127.0.0.1:<port>,
    //   Os { code: 111, kind: ConnectionRefused, message: "Connection refused" }))) — after ~10 ms, no retries
    expect(native).toMatchObject({ name: 'TransportError', message: expect.stringContaining('tcp connect error') });
    const js = await rejection(Connection.connect({ address, connectTimeout: '1 second' }));
    // Error: Failed to connect before the deadline (@grpc/grpc-js waitForReady; no code)
    expect(js).toMatchObject({ message: 'Failed to connect before the deadline' });
    for (const error of [native, js]) {
      expect([isTemporalUnavailable(error), isDatabaseUnavailable(error), unavailableDependency(error)]).toEqual([true, false, 'temporal']);
    }
  });

  describe('a dev server that was serving and then stopped', () => {
    let server: Awaited<ReturnType<typeof startTemporalDevServer>>;
    let native: NativeConnection;
    let js: Connection;
    beforeAll(async () => {
      server = await startTemporalDevServer({ namespace: 'default' });
      native = await NativeConnection.connect({ address: server.address });
      js = await Connection.connect({ address: server.address });
      await new Client({ connection: native }).workflow.start('anything', { taskQueue: 'nobody', workflowId: randomUUID() });
      await server.stop();
    });
    afterAll(async () => {
      await native?.close();
      await js?.close();
      await server?.stop();
    });

    it('a workflow start on the native connection gives up after the client\'s ~10 s of retries', async () => {
      const started = Date.now();
      const error = await rejection(new Client({ connection: native }).workflow.start('anything', { taskQueue: 'nobody', workflowId: randomUUID() }));
      const elapsed = Date.now() - started;
      // ServiceError: Failed to start Workflow { cause: ServiceError: tcp connect error { code: 14, details: '', metadata } }
      // after 6-10 s (the Rust client's retries; its log shows "retried 9 times … Unavailable, tcp connect error")
      expect(error).toMatchObject({ name: 'ServiceError', message: 'Failed to start Workflow', cause: { name: 'ServiceError', code: 14, message: 'tcp connect error' } });
      expect(elapsed).toBeGreaterThan(3_000);
      expect([isTemporalUnavailable(error), isDatabaseUnavailable(error)]).toEqual([true, false]);
    }, 30_000);

    it('a health check on the pure-JS connection: DEADLINE_EXCEEDED', async () => {
      const error = await rejection(checkTemporal(js, 500));
      // Error: 4 DEADLINE_EXCEEDED: Deadline exceeded after 0.000s,waiting for metadata filters { code: 4, details, metadata }
      // (bare @grpc/grpc-js status error, not wrapped in the client's ServiceError)
      expect(error).toMatchObject({ code: 4, message: expect.stringMatching(/^4 DEADLINE_EXCEEDED/) });
      expect([isTemporalUnavailable(error), isDatabaseUnavailable(error)]).toEqual([true, false]);
    });
  });

  it('is not fooled by a serving Temporal\'s refusals', async () => {
    const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
    try {
      const client = new Client({ connection });
      const workflowId = randomUUID();
      const notFound = await rejection(client.workflow.getHandle(workflowId).describe());
      await client.workflow.start('anything', { taskQueue: `nobody-${workflowId}`, workflowId });
      const duplicate = await rejection(client.workflow.start('anything', { taskQueue: `nobody-${workflowId}`, workflowId }));
      await client.workflow.getHandle(workflowId).terminate();
      expect(notFound).toBeInstanceOf(WorkflowNotFoundError);
      expect(duplicate).toBeInstanceOf(WorkflowExecutionAlreadyStartedError);
      for (const error of [notFound, duplicate]) expect([isTemporalUnavailable(error), isDatabaseUnavailable(error)]).toEqual([false, false]);
    } finally {
      await connection.close();
    }
  });
});

describe('dependencyUnavailable', () => {
  it('is a 503 naming the dependency, with Retry-After', () => {
    const error = dependencyUnavailable('temporal');
    expect([error.status, error.error, error.message, error.extra, error.headers]).toEqual([
      503, 'dependency_unavailable', 'Temporal is unavailable; retry shortly', { dependency: 'temporal' }, { 'retry-after': '5' },
    ]);
    expect(dependencyUnavailable('postgres', 30)).toMatchObject({ message: 'PostgreSQL is unavailable; retry shortly', headers: { 'retry-after': '30' } });
  });
});

describe('a Temporal call we stopped waiting for', () => {
  it('counts as Temporal unavailable, also as the cause of another error', () => {
    const timeout = new TemporalCallTimeout('workflow start', 5_000);
    expect(timeout.message).toBe('workflow start: no answer from Temporal within 5000 ms');
    expect(isTemporalUnavailable(timeout)).toBe(true);
    expect(isTemporalUnavailable(new Error('wrapped', { cause: timeout }))).toBe(true);
    expect(isDatabaseUnavailable(timeout)).toBe(false);
  });
});
