import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { createIdentityProvider, type IdentityProvider } from '../credentials/identity-provider.js';
import { createScheduleTokens } from '../credentials/schedule-tokens.js';
import { generateToken } from '../credentials/tokens.js';
import { newId } from '../ids.js';
import { createKeyRing } from '../secrets/key-ring.js';
import { DataApiError } from './errors.js';
import { anonKeysOf, createDataApiIdentity, type DataApiIdentityResolver } from './identity.js';

describe('data API identity', () => {
  let dataDir: string;
  let idp: IdentityProvider;
  let identity: DataApiIdentityResolver;
  let anonKey: string;
  const oldKey = randomBytes(32);
  const ring = createKeyRing(randomBytes(32), [oldKey]);

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'data-api-id-'));
    idp = await createIdentityProvider(loadConfig({ DATA_DIR: dataDir }));
    identity = createDataApiIdentity({ idp, secrets: ring });
    anonKey = identity.anonKey!;
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  const resolve = (headers: Record<string, string>, query?: Record<string, string>) => identity.resolve({ headers, query });
  const refusal = async (headers: Record<string, string>) => {
    const error = await resolve(headers).then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(DataApiError);
    expect((error as DataApiError).status).toBe(401);
    return (error as DataApiError).body;
  };

  it('the anon key alone, or as Bearer too (what supabase-js sends), is the anon role', async () => {
    expect(anonKey).toMatch(/^wfd-anon-[A-Za-z0-9_-]{32}$/);
    await expect(resolve({ apikey: anonKey })).resolves.toEqual({ role: 'anon' });
    await expect(resolve({ apikey: anonKey, authorization: `Bearer ${anonKey}` })).resolves.toEqual({ role: 'anon' });
    await expect(resolve({}, { apikey: anonKey })).resolves.toEqual({ role: 'anon' });
  });

  it('a user JWT is the authenticated role with its sub and claims', async () => {
    const userId = newId();
    const result = await resolve({ apikey: anonKey, authorization: `Bearer ${await idp.issue(userId, 60)}` });
    expect(result).toMatchObject({ role: 'authenticated', userId, claims: { sub: userId } });
  });

  it('a key derived from SECRETS_KEY_PREVIOUS still works; one from another secret does not', async () => {
    const previous = anonKeysOf(createKeyRing(oldKey)).current!;
    await expect(resolve({ apikey: previous })).resolves.toEqual({ role: 'anon' });
    const foreign = anonKeysOf(createKeyRing(randomBytes(32))).current!;
    expect((await refusal({ apikey: foreign })).message).toBe('Invalid API key');
    expect((await refusal({ apikey: anonKey, authorization: `Bearer ${foreign}` })).message).toBe('Invalid API key');
  });

  it('refuses a missing or wrong anon key', async () => {
    expect((await refusal({})).message).toBe('No API key found in request');
    expect((await refusal({ authorization: `Bearer ${await idp.issue(newId(), 60)}` })).message).toBe('No API key found in request');
    expect((await refusal({ apikey: anonKey.slice(0, -1) + 'x' })).message).toBe('Invalid API key');
  });

  it('refuses every other credential kind as Bearer', async () => {
    for (const kind of ['apiKey', 'oauthAccess', 'oauthRefresh', 'agent', 'phone'] as const) {
      expect((await refusal({ apikey: anonKey, authorization: `Bearer ${generateToken(kind)}` })).code).toBe('PGRST301');
    }
    const schedule = await (await createScheduleTokens(dataDir)).issue({ scheduleId: newId(), teamId: newId(), deploymentId: newId() }, 60);
    expect((await refusal({ apikey: anonKey, authorization: `Bearer ${schedule}` })).code).toBe('PGRST301');
    expect((await refusal({ apikey: anonKey, authorization: 'Basic abc' })).code).toBe('PGRST301');
  });

  it('refuses expired, forged, wrong-audience and non-user JWTs', async () => {
    const now = Math.floor(Date.now() / 1000);
    const config = loadConfig({ DATA_DIR: dataDir });
    const other = await createIdentityProvider(loadConfig({ DATA_DIR: await mkdtemp(path.join(os.tmpdir(), 'data-api-forger-')) }));
    const wrongAudience = await createIdentityProvider(loadConfig({ DATA_DIR: dataDir, JWT_AUDIENCE: 'elsewhere' }));
    expect(await refusal({ apikey: anonKey, authorization: `Bearer ${await other.issue(newId(), 60)}` })).toMatchObject({ code: 'PGRST301' });
    expect(await refusal({ apikey: anonKey, authorization: `Bearer ${await wrongAudience.issue(newId(), 60)}` })).toMatchObject({ code: 'PGRST301' });
    expect(await refusal({ apikey: anonKey, authorization: `Bearer ${await idp.issue('not-a-uuid', 60)}` })).toMatchObject({ code: 'PGRST301' });
    const hs = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(newId()).setIssuer(config.JWT_ISSUER)
      .setAudience(config.JWT_AUDIENCE).setIssuedAt(now - 120).setExpirationTime(now - 60).sign(new TextEncoder().encode('x'.repeat(32)));
    expect(await refusal({ apikey: anonKey, authorization: `Bearer ${hs}` })).toMatchObject({ code: 'PGRST301' });
    // An expired token from our own IdP says so.
    const expired = await idp.issue(newId(), -60);
    expect(await refusal({ apikey: anonKey, authorization: `Bearer ${expired}` })).toMatchObject({ code: 'PGRST303', message: 'JWT expired' });
  });

  it('a verified token is remembered only until it expires', async () => {
    const token = await idp.issue(newId(), 1);
    await expect(resolve({ apikey: anonKey, authorization: `Bearer ${token}` })).resolves.toMatchObject({ role: 'authenticated' });
    await new Promise((done) => setTimeout(done, 1100));
    expect(await refusal({ apikey: anonKey, authorization: `Bearer ${token}` })).toMatchObject({ code: 'PGRST303' });
  });
});
