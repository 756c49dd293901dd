import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import path from 'node:path';
import { ConfigError, type Config } from '../config.js';
import { decodeAes256Key } from '../crypto.js';
import { readOrCreatePrivateFile } from '../data-files.js';

// Secrets at rest (DESIGN.md §5): AES-256-GCM, each sealed value naming the key that sealed it so
// keys can rotate. Format: `v1:<keyId>:<iv>:<tag>:<ciphertext>` (base64url parts, 12-byte IV,
// 16-byte tag); keyId = first 8 hex characters of sha256(key).

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** `seal` without a current key: production without SECRETS_KEY. */
export class SecretsKeyMissingError extends Error {
  constructor() {
    super('SECRETS_KEY is not set: secrets cannot be stored');
    this.name = 'SecretsKeyMissingError';
  }
}

/** A sealed value that does not open: malformed, sealed by a key not in the ring, or altered. Never holds the plaintext. */
export class SealedSecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SealedSecretError';
  }
}

export interface SecretKeyRing {
  /** The key id new seals use; null when no key is configured (then `seal` throws). */
  readonly currentKeyId: string | null;
  /** Every key id `open` accepts, current first. */
  readonly keyIds: readonly string[];
  /**
   * Encrypts `plaintext`. `context` (e.g. the row it belongs to) is authenticated, not stored:
   * the value opens only with the same context, so a sealed value copied to another row is refused.
   */
  seal(plaintext: string, context?: string): string;
  open(sealed: string, context?: string): string;
  /**
   * Keys for another use (e.g. signing URLs), HKDF-SHA256 of the ring's keys with `label` as info:
   * `current` from SECRETS_KEY (null without one), `all` from every key, current first, so a
   * rotation keeps what the previous key signed verifiable. A derived key never equals a ring key.
   */
  deriveKeys(label: string, bytes?: number): { current: Buffer | null; all: Buffer[] };
}

export const keyIdOf = (key: Buffer): string => createHash('sha256').update(key).digest('hex').slice(0, 8);

/** A ring of raw 32-byte keys: `current` seals (null: sealing refused), every key opens. */
export function createKeyRing(current: Buffer | null, previous: readonly Buffer[] = []): SecretKeyRing {
  const keys = new Map<string, Buffer>();
  for (const key of current ? [current, ...previous] : previous) {
    if (key.length !== 32) throw new Error('AES-256 keys are 32 bytes');
    if (!keys.has(keyIdOf(key))) keys.set(keyIdOf(key), key);
  }
  const currentKeyId = current ? keyIdOf(current) : null;
  return {
    currentKeyId,
    keyIds: [...keys.keys()],
    seal(plaintext, context = '') {
      if (!current || !currentKeyId) throw new SecretsKeyMissingError();
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', current, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return [VERSION, currentKeyId, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join(':');
    },
    open(sealed, context = '') {
      const parts = sealed.split(':');
      if (parts.length !== 5 || parts[0] !== VERSION) throw new SealedSecretError('not a sealed secret (expected v1:<keyId>:<iv>:<tag>:<ciphertext>)');
      const [, keyId, iv, tag, ciphertext] = parts as [string, string, string, string, string];
      const key = keys.get(keyId);
      if (!key) throw new SealedSecretError(`sealed with key ${keyId}, which is neither SECRETS_KEY nor in SECRETS_KEY_PREVIOUS`);
      const ivBytes = Buffer.from(iv, 'base64url');
      const tagBytes = Buffer.from(tag, 'base64url');
      if (ivBytes.length !== IV_BYTES || tagBytes.length !== TAG_BYTES) throw new SealedSecretError('sealed secret is malformed');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, ivBytes, { authTagLength: TAG_BYTES });
        decipher.setAAD(Buffer.from(context, 'utf8'));
        decipher.setAuthTag(tagBytes);
        return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        throw new SealedSecretError(`sealed secret (key ${keyId}) failed authentication: altered, or sealed for another record`);
      }
    },
    deriveKeys(label, bytes = 32) {
      const derive = (key: Buffer) => Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), label, bytes));
      return { current: current ? derive(current) : null, all: [...keys.values()].map(derive) };
    },
  };
}

function decodeOrThrow(value: string, variable: string): Buffer {
  const key = decodeAes256Key(value);
  if (!key) throw new ConfigError(`${variable}: must be base64 of exactly 32 bytes (e.g. \`openssl rand -base64 32\`)`);
  return key;
}

/** Where development keeps its generated key when SECRETS_KEY is unset. */
export const devSecretsKeyFile = (dataDir: string) => path.join(dataDir, 'secrets', 'secrets-key.b64');

/**
 * The ring from configuration: SECRETS_KEY seals, it and SECRETS_KEY_PREVIOUS open. Without
 * SECRETS_KEY, development and test generate one key under DATA_DIR (mode 0600, shared by API and
 * worker) so `npm start` works; production gets a ring that refuses to seal.
 */
export async function loadSecretKeyRing(
  config: Pick<Config, 'NODE_ENV' | 'DATA_DIR' | 'SECRETS_KEY' | 'SECRETS_KEY_PREVIOUS'>,
): Promise<SecretKeyRing> {
  const previous = config.SECRETS_KEY_PREVIOUS.map((k) => decodeOrThrow(k, 'SECRETS_KEY_PREVIOUS'));
  if (config.SECRETS_KEY) return createKeyRing(decodeOrThrow(config.SECRETS_KEY, 'SECRETS_KEY'), previous);
  if (config.NODE_ENV === 'production') return createKeyRing(null, previous);
  const file = devSecretsKeyFile(config.DATA_DIR);
  const text = (await readOrCreatePrivateFile(file, () => randomBytes(32).toString('base64'))).trim();
  const key = decodeAes256Key(text);
  if (!key) throw new ConfigError(`${file} does not hold a base64 32-byte key: fix or delete it, or set SECRETS_KEY`);
  return createKeyRing(key, previous);
}
