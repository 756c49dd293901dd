import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { createIdentityProvider } from './identity-provider.js';

describe('identity provider', () => {
  let dataDir: string;
  beforeEach(async () => { dataDir = await mkdtemp(path.join(os.tmpdir(), 'idp-')); });
  afterEach(() => rm(dataDir, { recursive: true, force: true }));

  it('creates its key pair once, private to the owner, and reuses it on the next start', async () => {
    const first = await createIdentityProvider(loadConfig({ DATA_DIR: dataDir }));
    const file = path.join(dataDir, 'idp', 'signing-key.jwk.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(file, 'utf8')).d).toBeDefined();
    const second = await createIdentityProvider(loadConfig({ DATA_DIR: dataDir }));
    expect(second.publicJwks).toEqual(first.publicJwks);
    const token = await first.issue('user-1', 60);
    expect((await second.verify(token)).sub).toBe('user-1');
  });

  it('refuses a token for another audience, another issuer, or past its expiry', async () => {
    const idp = await createIdentityProvider(loadConfig({ DATA_DIR: dataDir }));
    const other = await createIdentityProvider(loadConfig({ DATA_DIR: dataDir, JWT_AUDIENCE: 'someone-else' }));
    await expect(idp.verify(await other.issue('u', 60))).rejects.toThrow(/aud/);
    const otherIssuer = await createIdentityProvider(loadConfig({ DATA_DIR: dataDir, JWT_ISSUER: 'elsewhere' }));
    await expect(idp.verify(await otherIssuer.issue('u', 60))).rejects.toThrow(/iss/);
  });

  it('with JWT_SECRET verifies HS256 tokens of an external IdP and publishes no keys', async () => {
    const config = loadConfig({ DATA_DIR: dataDir, JWT_SECRET: 'a-long-shared-secret-for-tests', JWT_ISSUER: 'https://idp.example', JWT_AUDIENCE: 'wfapp' });
    const idp = await createIdentityProvider(config);
    expect(idp.mode).toBe('shared-secret');
    expect(idp.publicJwks.keys).toEqual([]);
    const external = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('ext-user')
      .setIssuer('https://idp.example').setAudience('wfapp').setIssuedAt().setExpirationTime('1m')
      .sign(new TextEncoder().encode('a-long-shared-secret-for-tests'));
    expect((await idp.verify(external)).sub).toBe('ext-user');
    const forged = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('ext-user')
      .setIssuer('https://idp.example').setAudience('wfapp').setExpirationTime('1m')
      .sign(new TextEncoder().encode('another-secret-entirely-000000'));
    await expect(idp.verify(forged)).rejects.toThrow(/signature/);
  });
});
