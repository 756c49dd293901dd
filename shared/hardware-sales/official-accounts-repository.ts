import type { Database } from '../db/client.js';

// Kysely queries of the chan_a official accounts (official-accounts.ts). The AppSecret arrives
// and leaves sealed: sealing and opening are the caller's.

export async function oauthClientExists(db: Database, clientId: string): Promise<boolean> {
  const client = await db.selectFrom('oauth_clients').select('client_id').where('client_id', '=', clientId).executeTakeFirst();
  return client !== undefined;
}

/** Creates or replaces the account of `clientId`. */
export async function upsertOfficialAccount(
  db: Database, account: { clientId: string; appId: string; appSecretSealed: string; safeDomains: string[] },
): Promise<void> {
  const safeDomains = JSON.stringify(account.safeDomains);
  await db.insertInto('chan_a_official_accounts')
    .values({ client_id: account.clientId, app_id: account.appId, app_secret_sealed: account.appSecretSealed, safe_domains: safeDomains })
    .onConflict((oc) => oc.column('client_id').doUpdateSet({
      app_id: account.appId, app_secret_sealed: account.appSecretSealed, safe_domains: safeDomains, updated_at: new Date(),
    }))
    .execute();
}

export async function findOfficialAccount(db: Database, clientId: string) {
  return db.selectFrom('chan_a_official_accounts').selectAll().where('client_id', '=', clientId).executeTakeFirst();
}
