import { createHmac, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { createKeyRing, loadSecretKeyRing } from '../secrets/key-ring.js';
import { objectUrlSigner, signedObjectUrl, type ObjectUrlSigner } from './signed-urls.js';

const NOW = Date.UTC(2026, 10, 24, 12, 0, 0);
const nowSeconds = NOW / 1000;
const KEY = 'firmware/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef';

/** The query a signed URL carries, as the route receives it. */
function queryOf(url: string): Record<string, string> {
  return Object.fromEntries(new URL(url).searchParams);
}

describe('signed object URLs', () => {
  const ringKey = randomBytes(32);
  const signer = objectUrlSigner(createKeyRing(ringKey));
  const url = signedObjectUrl(signer, 'https://dl.example.com', { key: KEY, name: 'main_v1.2.bin' }, 300, NOW);
  const query = queryOf(url);

  it('build <origin>/object-store/<key>?expires&name&sig, expiring ttl seconds from now', () => {
    expect(url.startsWith(`https://dl.example.com/object-store/${KEY}?`)).toBe(true);
    expect(query).toEqual({ expires: String(nowSeconds + 300), name: 'main_v1.2.bin', sig: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
    expect(signer.verify(KEY, query, NOW)).toEqual({ ok: true, ref: { key: KEY, expires: nowSeconds + 300, name: 'main_v1.2.bin' } });
  });

  it('refuse any change to the key, the expiry, the name or the signature', () => {
    const flipped = `${query.sig!.slice(0, -1)}${query.sig!.endsWith('A') ? 'B' : 'A'}`;
    const invalid = { ok: false, reason: 'invalid' };
    expect(signer.verify(KEY.replace(/f$/, 'e'), query, NOW)).toEqual(invalid);
    expect(signer.verify(KEY, { ...query, expires: String(nowSeconds + 301) }, NOW)).toEqual(invalid);
    expect(signer.verify(KEY, { ...query, name: 'other.bin' }, NOW)).toEqual(invalid);
    expect(signer.verify(KEY, { expires: query.expires, sig: query.sig }, NOW)).toEqual(invalid);
    expect(signer.verify(KEY, { ...query, sig: flipped }, NOW)).toEqual(invalid);
  });

  it('refuse malformed and missing parts without throwing', () => {
    const invalid = { ok: false, reason: 'invalid' };
    for (const bad of [
      {}, { expires: query.expires }, { sig: query.sig },
      { ...query, sig: `${query.sig}=` }, { ...query, sig: `${query.sig}AA` }, { ...query, sig: query.sig!.slice(1) }, { ...query, sig: '' },
      { ...query, expires: `${query.expires}.0` }, { ...query, expires: '-1' }, { ...query, expires: '' }, { ...query, expires: '9'.repeat(13) },
      { ...query, expires: [query.expires, query.expires] }, { ...query, sig: [query.sig, query.sig] }, { ...query, name: ['a', 'b'] },
    ]) {
      expect(signer.verify(KEY, bad, NOW), JSON.stringify(bad)).toEqual(invalid);
    }
  });

  it('call a genuine URL past its expiry expired, and only then', () => {
    const expiresMs = (nowSeconds + 300) * 1000;
    expect(signer.verify(KEY, query, expiresMs - 1).ok).toBe(true);
    expect(signer.verify(KEY, query, expiresMs)).toEqual({ ok: false, reason: 'expired' });
    // A forged URL is invalid whatever its expiry says.
    expect(signer.verify(KEY, { ...query, expires: '1' }, NOW)).toEqual({ ok: false, reason: 'invalid' });
  });

  it('sign with an HKDF-derived key, never the ring key itself, and verify with every ring key', () => {
    const rawSig = createHmac('sha256', ringKey).update(['object-url:v1', KEY, query.expires, query.name].join('\n')).digest('base64url');
    expect(signer.verify(KEY, { ...query, sig: rawSig }, NOW).ok).toBe(false);

    const rotated = objectUrlSigner(createKeyRing(randomBytes(32), [ringKey]));
    expect(rotated.verify(KEY, query, NOW).ok).toBe(true);
    expect(objectUrlSigner(createKeyRing(randomBytes(32))).verify(KEY, query, NOW).ok).toBe(false);
  });
});

describe('the deployment signer (from the secrets key ring)', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'signed-urls-'));
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });
  const sample = (signer: ObjectUrlSigner) => queryOf(signedObjectUrl(signer, 'https://x.test', { key: KEY, name: 'a.bin' }, 60, NOW));

  it('is the same in every process and after a restart: the development key in DATA_DIR', async () => {
    const config = loadConfig({ NODE_ENV: 'development', DATA_DIR: dataDir });
    const [first, second] = [objectUrlSigner(await loadSecretKeyRing(config)), objectUrlSigner(await loadSecretKeyRing(config))];
    expect(first.canSign).toBe(true);
    expect(second.verify(KEY, sample(first), NOW).ok).toBe(true);
    const elsewhere = objectUrlSigner(await loadSecretKeyRing(loadConfig({ NODE_ENV: 'development', DATA_DIR: path.join(dataDir, 'other') })));
    expect(elsewhere.verify(KEY, sample(first), NOW).ok).toBe(false);
  });

  it('follows SECRETS_KEY, keeps verifying with SECRETS_KEY_PREVIOUS, and cannot sign in production without a key', async () => {
    const [oldKey, newKey] = [randomBytes(32).toString('base64'), randomBytes(32).toString('base64')];
    const before = objectUrlSigner(await loadSecretKeyRing(loadConfig({ NODE_ENV: 'production', DATA_DIR: dataDir, SECRETS_KEY: oldKey })));
    const after = objectUrlSigner(await loadSecretKeyRing(loadConfig({ NODE_ENV: 'production', DATA_DIR: dataDir, SECRETS_KEY: newKey, SECRETS_KEY_PREVIOUS: oldKey })));
    const signedBefore = sample(before);
    expect(after.verify(KEY, signedBefore, NOW).ok).toBe(true);
    expect(sample(after).sig).not.toBe(signedBefore.sig);

    const keyless = objectUrlSigner(await loadSecretKeyRing(loadConfig({ NODE_ENV: 'production', DATA_DIR: dataDir })));
    expect(keyless.canSign).toBe(false);
    expect(() => keyless.sign({ key: KEY, expires: nowSeconds })).toThrow(/SECRETS_KEY/);
    expect(keyless.verify(KEY, signedBefore, NOW).ok).toBe(false);
  });
});
