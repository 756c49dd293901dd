import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';

export const SERVICE_KEY_ALG = 'ES256';

/**
 * Loads this service's ES256 signing key from `<dataDir>/<name>.jwk.json`, creating it on first
 * start. `wx` makes concurrent first starts (API and worker together) agree on one key.
 */
export async function loadOrCreateSigningKey(dataDir: string, name: string, fromEnv?: string): Promise<JWK> {
  if (fromEnv) return JSON.parse(fromEnv) as JWK;
  const file = path.join(dataDir, 'idp', `${name}.jwk.json`);
  try {
    return JSON.parse(await readFile(file, 'utf8')) as JWK;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const { privateKey } = await generateKeyPair(SERVICE_KEY_ALG, { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), alg: SERVICE_KEY_ALG, use: 'sig' };
  jwk.kid = await calculateJwkThumbprint(jwk);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    await writeFile(file, JSON.stringify(jwk), { mode: 0o600, flag: 'wx' });
    return jwk;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return JSON.parse(await readFile(file, 'utf8')) as JWK;
  }
}
