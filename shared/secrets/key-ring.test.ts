import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../config.js';
import { createKeyRing, devSecretsKeyFile, keyIdOf, loadSecretKeyRing, SealedSecretError, SecretsKeyMissingError } from './key-ring.js';

const SECRET = 'sk-live-plaintext-1234';
const keyA = randomBytes(32);
const keyB = randomBytes(32);

describe('secret key ring', () => {
  it('round-trips, in the v1:<keyId>:<iv>:<tag>:<ciphertext> format, with a fresh IV each time', () => {
    const ring = createKeyRing(keyA);
    const sealed = ring.seal(SECRET);
    expect(sealed).toMatch(/^v1:[0-9a-f]{8}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]{22}:[A-Za-z0-9_-]+$/);
    expect(sealed.split(':')[1]).toBe(keyIdOf(keyA));
    expect(ring.currentKeyId).toBe(keyIdOf(keyA));
    expect(sealed).not.toContain(SECRET);
    expect(ring.open(sealed)).toBe(SECRET);
    expect(ring.seal(SECRET)).not.toBe(sealed);
    expect(ring.open(ring.seal(''))).toBe('');
    expect(ring.open(ring.seal('ünïcødé ✓'))).toBe('ünïcødé ✓');
  });

  it('detects tampering with the ciphertext, tag or IV', () => {
    const ring = createKeyRing(keyA);
    const [v, id, iv, tag, ct] = ring.seal(SECRET).split(':') as [string, string, string, string, string];
    const flip = (b64: string) => {
      const bytes = Buffer.from(b64, 'base64url');
      bytes[0]! ^= 1;
      return bytes.toString('base64url');
    };
    for (const altered of [[v, id, iv, tag, flip(ct)], [v, id, iv, flip(tag), ct], [v, id, flip(iv), tag, ct]]) {
      expect(() => ring.open(altered.join(':'))).toThrow(SealedSecretError);
    }
    expect(() => ring.open('plaintext')).toThrow(/not a sealed secret/);
    expect(() => ring.open(['v2', id, iv, tag, ct].join(':'))).toThrow(SealedSecretError);
  });

  it('binds a sealed value to its context', () => {
    const ring = createKeyRing(keyA);
    const sealed = ring.seal(SECRET, 'team-1/acme');
    expect(ring.open(sealed, 'team-1/acme')).toBe(SECRET);
    expect(() => ring.open(sealed, 'team-2/acme')).toThrow(/failed authentication/);
    expect(() => ring.open(sealed)).toThrow(SealedSecretError);
  });

  it('rotation: values sealed with a previous key open; new seals use the current key', () => {
    const old = createKeyRing(keyA).seal(SECRET);
    const rotated = createKeyRing(keyB, [keyA]);
    expect(rotated.open(old)).toBe(SECRET);
    expect(rotated.seal(SECRET).split(':')[1]).toBe(keyIdOf(keyB));
    expect(rotated.keyIds).toEqual([keyIdOf(keyB), keyIdOf(keyA)]);
  });

  it('an unknown key id fails, naming the id and never the plaintext', () => {
    const sealed = createKeyRing(keyA).seal(SECRET);
    const error = (() => { try { createKeyRing(keyB).open(sealed); } catch (e) { return e as Error; } throw new Error('opened'); })();
    expect(error).toBeInstanceOf(SealedSecretError);
    expect(error.message).toContain(keyIdOf(keyA));
    expect(error.message).not.toContain(SECRET);
  });

  it('without a current key: refuses to seal, still opens with previous keys', () => {
    const ring = createKeyRing(null, [keyA]);
    expect(ring.currentKeyId).toBeNull();
    expect(() => ring.seal(SECRET)).toThrow(SecretsKeyMissingError);
    expect(ring.open(createKeyRing(keyA).seal(SECRET))).toBe(SECRET);
  });
});

describe('key ring from configuration', () => {
  const dirs: string[] = [];
  const tempDir = async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-secrets-'));
    dirs.push(dir);
    return dir;
  };
  afterAll(async () => { for (const dir of dirs) await rm(dir, { recursive: true, force: true }); });

  it('a malformed SECRETS_KEY or SECRETS_KEY_PREVIOUS fails at start, naming the variable', () => {
    expect(() => loadConfig({ SECRETS_KEY: 'too-short' })).toThrow(ConfigError);
    expect(() => loadConfig({ SECRETS_KEY: 'too-short' })).toThrow(/SECRETS_KEY: must be base64 of exactly 32 bytes/);
    expect(() => loadConfig({ SECRETS_KEY: randomBytes(16).toString('base64') })).toThrow(/SECRETS_KEY/);
    expect(() => loadConfig({ SECRETS_KEY: `${randomBytes(32).toString('base64')}!` })).toThrow(/SECRETS_KEY/);
    expect(() => loadConfig({ SECRETS_KEY_PREVIOUS: `${keyA.toString('base64')},nope` })).toThrow(/SECRETS_KEY_PREVIOUS/);
    const config = loadConfig({ SECRETS_KEY: keyB.toString('base64url'), SECRETS_KEY_PREVIOUS: ` ${keyA.toString('base64')} , ` });
    expect(config.SECRETS_KEY_PREVIOUS).toEqual([keyA.toString('base64')]);
    expect(loadConfig({ SECRETS_KEY: '' }).SECRETS_KEY).toBeUndefined();
  });

  it('SECRETS_KEY seals and SECRETS_KEY_PREVIOUS opens', async () => {
    const dataDir = await tempDir();
    const ring = await loadSecretKeyRing(loadConfig({ DATA_DIR: dataDir, SECRETS_KEY: keyB.toString('base64'), SECRETS_KEY_PREVIOUS: keyA.toString('base64') }));
    expect(ring.keyIds).toEqual([keyIdOf(keyB), keyIdOf(keyA)]);
    await expect(stat(devSecretsKeyFile(dataDir))).rejects.toThrow(/ENOENT/);
  });

  it('development without SECRETS_KEY: one generated key under DATA_DIR (0600), the same on every start', async () => {
    const dataDir = await tempDir();
    const config = loadConfig({ NODE_ENV: 'development', DATA_DIR: dataDir });
    const [first, second] = await Promise.all([loadSecretKeyRing(config), loadSecretKeyRing(config)]);
    expect(first.currentKeyId).toMatch(/^[0-9a-f]{8}$/);
    expect(second.currentKeyId).toBe(first.currentKeyId);
    expect((await loadSecretKeyRing(config)).open(first.seal(SECRET))).toBe(SECRET);
    expect((await stat(devSecretsKeyFile(dataDir))).mode & 0o777).toBe(0o600);
  });

  it('production without SECRETS_KEY: nothing generated, sealing refused', async () => {
    const dataDir = await tempDir();
    const ring = await loadSecretKeyRing(loadConfig({ NODE_ENV: 'production', DATA_DIR: dataDir }));
    expect(ring.currentKeyId).toBeNull();
    expect(() => ring.seal(SECRET)).toThrow(SecretsKeyMissingError);
    await expect(stat(devSecretsKeyFile(dataDir))).rejects.toThrow(/ENOENT/);
  });
});
