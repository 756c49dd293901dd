import path from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import { readOrCreatePrivateFile } from '../data-files.js';

export const SERVICE_KEY_ALG = 'ES256';

/**
 * Loads this service's ES256 signing key from `<dataDir>/idp/<name>.jwk.json`, creating it on first
 * start (concurrent first starts agree on one key).
 */
export async function loadOrCreateSigningKey(dataDir: string, name: string, fromEnv?: string): Promise<JWK> {
  if (fromEnv) return JSON.parse(fromEnv) as JWK;
  const text = await readOrCreatePrivateFile(path.join(dataDir, 'idp', `${name}.jwk.json`), async () => {
    const { privateKey } = await generateKeyPair(SERVICE_KEY_ALG, { extractable: true });
    const jwk = { ...(await exportJWK(privateKey)), alg: SERVICE_KEY_ALG, use: 'sig' };
    jwk.kid = await calculateJwkThumbprint(jwk);
    return JSON.stringify(jwk);
  });
  return JSON.parse(text) as JWK;
}
