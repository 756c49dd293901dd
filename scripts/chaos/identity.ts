// The stack's own credentials, read from its data dir as its APIs read them (the development IdP's
// signing key and the secrets key the anon key derives from, both made by the first API at start):
// buyers and realtime subscribers log in with JWTs this IdP issues, as the service's users do.
import { loadConfig } from '../../shared/config.js';
import { createIdentityProvider, type IdentityProvider } from '../../shared/credentials/identity-provider.js';
import { anonKeysOf } from '../../shared/data-api/identity.js';
import { loadSecretKeyRing } from '../../shared/secrets/key-ring.js';

export async function stackIdentity(dataDir: string): Promise<{ idp: IdentityProvider; anonKey: string }> {
  const config = loadConfig({ ...process.env, DATA_DIR: dataDir });
  const anonKey = anonKeysOf(await loadSecretKeyRing(config)).current;
  if (!anonKey) throw new Error(`no anon key: the stack in ${dataDir} has no secrets key`);
  return { idp: await createIdentityProvider(config), anonKey };
}
