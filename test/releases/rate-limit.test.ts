import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.js';
import { createRedisRateLimiter } from '../../shared/rate-limit/rate-limiter.js';
import { credentialFactory } from '../harness/credentials.js';
import { startRedis } from '../harness/redis.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { releaseTenant, releaseWith, runCount } from './fixture.js';

type App = TestStack['app'];
const TOO_MANY = 'Too many requests, please try again later';

/** A release limited to 5 calls per minute: /run runs the public app, /todo has no deployment (cheap: counted, no run). */
async function limitedRelease(stack: TestStack, rateLimit: unknown = { windowSeconds: 60, maxRequests: 5 }) {
  const tenant = await releaseTenant(stack);
  const release = await releaseWith(stack, {
    projectId: tenant.projectId, anonymousApiKeyId: tenant.releaseKey.id, config: { requireAuth: false },
    endpoints: [{ method: 'POST', path: '/run', deploymentId: tenant.publicApp.deploymentId }, { method: 'POST', path: '/todo' }],
  });
  if (rateLimit !== undefined) await stack.db.updateTable('releases').set({ config: JSON.stringify({ requireAuth: false, rateLimit }) }).where('id', '=', release.id).execute();
  return { tenant, release };
}

const callMany = (apps: App[], count: number, url: string, headers: Record<string, string> = {}, remoteAddress = '127.0.0.1') =>
  Promise.all(Array.from({ length: count }, (_, i) => apps[i % apps.length]!.inject({
    method: 'POST', url, remoteAddress, headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify({ name: 'Ada' }),
  })));
const statuses = (responses: Array<{ statusCode: number }>) => responses.map((r) => r.statusCode).sort();

describe('release rate limit, in memory', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
  });
  afterAll(() => stack?.close());

  it('2 × maxRequests calls in one window: exactly maxRequests run, the rest get 429 with the limit headers', async () => {
    const { release } = await limitedRelease(stack);
    const before = await runCount(stack);
    const responses = await callMany([stack.app], 10, release.url('1.0', '/run'));
    expect(statuses(responses)).toEqual([200, 200, 200, 200, 200, 429, 429, 429, 429, 429]);
    expect(await runCount(stack)).toBe(before + 5);
    const refused = responses.find((r) => r.statusCode === 429)!;
    expect(refused.json()).toMatchObject({ error: TOO_MANY });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(refused.headers).toMatchObject({ 'x-ratelimit-limit': '5', 'x-ratelimit-remaining': '0' });
    expect(Number(refused.headers['x-ratelimit-reset'])).toBeGreaterThanOrEqual(1);
    const remaining = responses.filter((r) => r.statusCode === 200).map((r) => r.headers['x-ratelimit-remaining']).sort();
    expect(remaining).toEqual(['0', '1', '2', '3', '4']);
  });

  it('buckets: each API key, each agent binding and each client IP (OAuth, anonymous) has its own budget', async () => {
    const make = credentialFactory(stack);
    const { tenant, release } = await limitedRelease(stack);
    const url = release.url('1.0', '/todo');
    const secondKey = (await make.apiKey(tenant.team.id, tenant.owner.id)).token;
    const agent = await make.agentToken(tenant.team.id, tenant.owner.id, []);
    const oauth = await make.oauthToken(tenant.owner.id, ['chat:completions']);
    const spend = async (headers: Record<string, string>, ip = '127.0.0.1') => statuses(await callMany([stack.app], 6, url, headers, ip)).filter((s) => s === 429).length;
    expect(await spend({ authorization: `Bearer ${tenant.apiKey}` })).toBe(1);
    expect(await spend({ authorization: `Bearer ${secondKey}` })).toBe(1);
    expect(await spend({ authorization: `Bearer ${agent.token}` })).toBe(1);
    expect(await spend({}, '10.0.0.1')).toBe(1);
    // OAuth shares the client IP's bucket with anonymous callers of that IP: already spent.
    expect(await spend({ authorization: `Bearer ${oauth.token}` }, '10.0.0.1')).toBe(6);
    expect(await spend({ authorization: `Bearer ${oauth.token}` }, '10.0.0.2')).toBe(1);
  });

  it('each release has its own budget for the same caller', async () => {
    const first = await limitedRelease(stack);
    const second = await limitedRelease(stack);
    expect(statuses(await callMany([stack.app], 5, first.release.url('1.0', '/todo'))).every((s) => s === 400)).toBe(true);
    expect(statuses(await callMany([stack.app], 5, second.release.url('1.0', '/todo'))).every((s) => s === 400)).toBe(true);
  });

  it.each([
    ['windowSeconds 0 and maxRequests 1e9', { windowSeconds: 0, maxRequests: 1e9 }],
    ['no rateLimit at all', undefined],
  ])('an invalid or missing rateLimit (%s) falls back to the global 60 per 60 s, not to no limit', async (_label, rateLimit) => {
    const { release } = await limitedRelease(stack, rateLimit ?? null);
    const responses = await callMany([stack.app], 61, release.url('1.0', '/todo'));
    expect(responses[0]!.headers['x-ratelimit-limit']).toBe('60');
    expect(statuses(responses).filter((s) => s === 429)).toHaveLength(1);
    expect(statuses(responses).filter((s) => s === 400)).toHaveLength(60);
  });
});

describe('release rate limit, shared through Redis by two API instances', () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let stack: TestStack;
  let second: App;
  let secondLimiter: ReturnType<typeof createRedisRateLimiter>;

  beforeAll(async () => {
    redis = await startRedis();
    stack = await createTestStack({ REDIS_URL: redis.url });
    await stack.startWorker();
    // A second API process in all but name: its own app and its own Redis connection.
    secondLimiter = createRedisRateLimiter(redis.url);
    second = await buildApp({ ...stack.deps, rateLimiter: secondLimiter }, { logger: false });
    await Promise.all([secondLimiter.ready(), (stack.deps.rateLimiter as typeof secondLimiter).ready()]);
  });
  afterAll(async () => {
    await second?.close();
    await secondLimiter?.close();
    await stack?.close();
    await redis?.stop();
  });

  it('2 × maxRequests calls spread over both instances: exactly maxRequests run in total', async () => {
    const { release } = await limitedRelease(stack);
    const before = await runCount(stack);
    const responses = await callMany([stack.app, second], 10, release.url('1.0', '/run'));
    expect(statuses(responses)).toEqual([200, 200, 200, 200, 200, 429, 429, 429, 429, 429]);
    expect(await runCount(stack)).toBe(before + 5);
    // Each instance got five calls: counting alone, each would have let all five through.
    const keys = await (async () => {
      const { Redis } = await import('ioredis');
      const client = new Redis(redis.url);
      try { return await client.keys('rl:5/60s:*'); } finally { client.disconnect(); }
    })();
    expect(keys.some((k) => k.includes(release.id))).toBe(true);
  });
});
