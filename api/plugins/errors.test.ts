import { Writable } from 'node:stream';
import { NativeConnection } from '@temporalio/worker';
import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDb } from '../../shared/db/client.js';
import { AppError } from '../../shared/errors.js';
import { findFreePort } from '../../shared/ports.js';
import { errorsPlugin, useErrorEnvelope, type ErrorEnvelope } from './errors.js';

async function appWithFamilies(logger: { level: string; stream: Writable } | false = false) {
  const app = Fastify({ logger }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  await app.register(errorsPlugin);
  for (const family of ['public', 'webhook', 'payment', 'connectors'] as ErrorEnvelope[]) {
    await app.register(async (scoped) => {
      useErrorEnvelope(scoped, family);
      scoped.get(`/${family}`, async () => { throw new AppError(409, 'some_code', 'Something conflicted'); });
    });
  }
  app.get('/standard', async () => { throw new AppError(402, 'insufficient_credits', 'Credit balance too low', { required: 5 }); });
  app.get('/boom', async () => { throw new Error('connection string postgres://secret@db leaked?'); });
  app.get('/stream-then-fail', async (_request, reply) => {
    reply.type('text/event-stream; charset=utf-8');
    throw new AppError(503, 'dependency_unavailable', 'PostgreSQL is unavailable; retry shortly', { dependency: 'postgres' }, { 'retry-after': '5' });
  });
  app.get('/busy', async () => { throw new AppError(429, 'rate_limited', 'Too many calls', {}, { 'retry-after': '7' }); });
  app.post('/validated', { schema: { body: z.object({ name: z.string().min(1), count: z.number().int() }) } }, async () => ({ ok: true }));
  await app.register(async (scoped) => {
    useErrorEnvelope(scoped, 'public');
    scoped.post('/public/validated', { schema: { body: z.object({ name: z.string().min(1) }) } }, async () => ({ ok: true }));
  });
  return app;
}

describe('one error handler, one envelope per route family (spec §7.1)', () => {
  it('a route that chose a stream type before failing still answers its error as JSON (not a 500)', async () => {
    const app = await appWithFamilies();
    const res = await app.inject({ method: 'GET', url: '/stream-then-fail' });
    expect(res.statusCode).toBe(503);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['retry-after']).toBe('5');
    expect(res.json()).toEqual({ error: 'dependency_unavailable', message: 'PostgreSQL is unavailable; retry shortly', dependency: 'postgres' });
  });

  it.each([
    ['standard', 402, { error: 'insufficient_credits', message: 'Credit balance too low', required: 5 }],
    ['public', 409, { success: false, error: { code: 'some_code', message: 'Something conflicted' } }],
    ['webhook', 409, { code: 'some_code', message: 'Something conflicted' }],
    ['connectors', 409, { error: 'some_code' }],
  ])('%s', async (family, status, body) => {
    const app = await appWithFamilies();
    const res = await app.inject({ method: 'GET', url: `/${family}` });
    expect(res.statusCode).toBe(status);
    expect(res.json()).toEqual(body);
  });

  it('payment callbacks get plain-text FAIL, and a refusal below 500 is 500 (spec §4.7: every failure is 500 FAIL)', async () => {
    const app = await appWithFamilies();
    const res = await app.inject({ method: 'GET', url: '/payment' });
    expect(res.statusCode).toBe(500);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toBe('FAIL');
  });

  it('never shows a 5xx cause to the caller', async () => {
    const app = await appWithFamilies();
    const res = await app.inject({ method: 'GET', url: '/boom' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ error: 'internal_error', message: 'Internal server error' });
  });

  it('the public family says INVALID_REQUEST (§7.6) for a malformed JSON body and for a field that fails its schema', async () => {
    const app = await appWithFamilies();
    const malformed = await app.inject({ method: 'POST', url: '/public/validated', headers: { 'content-type': 'application/json' }, payload: '{"name":' });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json()).toEqual({ success: false, error: { code: 'INVALID_REQUEST', message: expect.stringMatching(/^Malformed JSON body: /) } });
    const invalid = await app.inject({ method: 'POST', url: '/public/validated', payload: { name: '' } });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json()).toEqual({ success: false, error: { code: 'INVALID_REQUEST', message: expect.stringMatching(/^body\.name: /) } });
    // Elsewhere the generic codes stay as they were.
    const standard = await app.inject({ method: 'POST', url: '/validated', headers: { 'content-type': 'application/json' }, payload: '{"name":' });
    expect([standard.statusCode, standard.json().error]).toEqual([400, 'invalid_json']);
  });

  it('a schema violation is a 400 listing each field', async () => {
    const app = await appWithFamilies();
    const res = await app.inject({ method: 'POST', url: '/validated', payload: { name: '', count: 1.5 } });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.error).toBe('invalid_request');
    expect(body.details.map((d: { field: string }) => d.field).sort()).toEqual(['body.count', 'body.name']);
  });
});

/** What the real clients throw when the dependency's port is closed (shapes: shared/dependency-errors.test.ts). */
async function realOutageErrors() {
  const closed = `127.0.0.1:${await findFreePort()}`;
  const db = createDb(`postgres://postgres:x@${closed}/none`, { poolSize: 1 });
  const postgres = await sql`select 1`.execute(db).then(() => null, (error: unknown) => error);
  await db.destroy();
  const temporal = await NativeConnection.connect({ address: closed }).then(() => null, (error: unknown) => error);
  return { postgres, temporal };
}

async function appFailingWith(error: unknown, logger: { level: string; stream: Writable } | false = false) {
  const app = Fastify({ logger });
  await app.register(errorsPlugin);
  for (const family of ['public', 'webhook', 'payment', 'hardware-callback', 'connectors'] as ErrorEnvelope[]) {
    await app.register(async (scoped) => {
      useErrorEnvelope(scoped, family);
      scoped.get(`/${family}`, async () => { throw error; });
    });
  }
  app.get('/standard', async () => { throw error; });
  return app;
}

describe('a dependency that cannot be reached is a 503 with Retry-After, not a 500', () => {
  let errors: Awaited<ReturnType<typeof realOutageErrors>>;
  beforeAll(async () => { errors = await realOutageErrors(); });

  it.each([
    ['postgres', 'PostgreSQL'],
    ['temporal', 'Temporal'],
  ] as const)('%s: every envelope family, same status and header', async (dependency, name) => {
    const app = await appFailingWith(errors[dependency]);
    const message = `${name} is unavailable; retry shortly`;
    const expected: Record<string, unknown> = {
      standard: { error: 'dependency_unavailable', message, dependency },
      public: { success: false, error: { code: 'dependency_unavailable', message } },
      webhook: { code: 'dependency_unavailable', message, dependency },
      connectors: { error: 'dependency_unavailable', dependency },
      payment: 'FAIL',
      // The hardware channel's body is its code alone (spec §4.7); the status says it is an outage.
      'hardware-callback': { code: 'FAIL' },
    };
    for (const [family, body] of Object.entries(expected)) {
      const res = await app.inject({ method: 'GET', url: `/${family}` });
      expect([family, res.statusCode, res.headers['retry-after']]).toEqual([family, 503, '5']);
      expect(family === 'payment' ? res.body : res.json()).toEqual(body);
    }
  });

  it('is logged at warn with the dependency, not at error', async () => {
    const lines: Array<{ level: number; msg: string; dependency?: string }> = [];
    const stream = new Writable({ write(chunk, _encoding, done) { lines.push(JSON.parse(String(chunk))); done(); } });
    const app = await appFailingWith(errors.postgres, { level: 'info', stream });
    await app.inject({ method: 'GET', url: '/standard' });
    const failures = lines.filter((line) => line.level >= 40);
    expect(failures.map(({ level, msg, dependency }) => ({ level, msg, dependency })))
      .toEqual([{ level: 40, msg: 'dependency unavailable', dependency: 'postgres' }]);
  });

  it('an AppError\'s headers are set on the response', async () => {
    const app = await appWithFamilies();
    const res = await app.inject({ method: 'GET', url: '/busy' });
    expect([res.statusCode, res.headers['retry-after'], res.json()]).toEqual([429, '7', { error: 'rate_limited', message: 'Too many calls' }]);
  });
});
