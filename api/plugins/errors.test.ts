import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppError } from '../../shared/errors.js';
import { errorsPlugin, useErrorEnvelope, type ErrorEnvelope } from './errors.js';

async function appWithFamilies() {
  const app = Fastify({ logger: false }).withTypeProvider<ZodTypeProvider>();
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
  app.post('/validated', { schema: { body: z.object({ name: z.string().min(1), count: z.number().int() }) } }, async () => ({ ok: true }));
  return app;
}

describe('one error handler, one envelope per route family (spec §7.1)', () => {
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

  it('payment callbacks get plain-text FAIL', async () => {
    const app = await appWithFamilies();
    const res = await app.inject({ method: 'GET', url: '/payment' });
    expect(res.statusCode).toBe(409);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toBe('FAIL');
  });

  it('never shows a 5xx cause to the caller', async () => {
    const app = await appWithFamilies();
    const res = await app.inject({ method: 'GET', url: '/boom' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ error: 'internal_error', message: 'Internal server error' });
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
