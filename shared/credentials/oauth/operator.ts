import type { Database } from '../../db/client.js';
import { AppError, notFound } from '../../errors.js';
import { newId } from '../../ids.js';
import { findUserById } from '../../identity/repository.js';
import { requireKnownScopes } from './apps.js';
import * as repo from './repository.js';
import { ACCESS_TOKEN_TTL_SECONDS } from './rules.js';
import { issueTokenPair } from './token-pairs.js';

/** Issues a token pair without the browser flow (operator CLI), on a new grant for the app's first client. */
export async function issueTokensByOperator(
  db: Database,
  input: { appId: string; userId: string; scopes: string[]; ttlSeconds?: number },
): Promise<{ accessToken: string; refreshToken: string; expiresIn: number }> {
  requireKnownScopes(input.scopes);
  return db.transaction().execute(async (trx) => {
    const app = await repo.findApp(trx, input.appId);
    if (!app || app.deleted_at) throw notFound(`OAuth app ${input.appId}`);
    if (app.disabled_at) throw new AppError(409, 'app_disabled', `OAuth app ${input.appId} is disabled`);
    if (!(await findUserById(trx, input.userId))) throw notFound(`User ${input.userId}`);
    const client = await repo.findFirstClientOfApp(trx, app.id);
    if (!client) throw notFound(`A client of OAuth app ${input.appId}`);
    // A token only ever does what its client may (rules.ts effectiveScopes): refuse rather than issue dead scopes.
    const outside = input.scopes.filter((s) => !client.allowed_scopes.includes(s));
    if (outside.length) throw new AppError(400, 'invalid_scope', `The app's client does not have scope(s): ${outside.join(', ')}`);
    const grant = await repo.insertGrant(trx, { id: newId(), client_pk: client.id, app_id: app.id, user_id: input.userId, scopes: input.scopes });
    const set = await issueTokenPair(trx, { grantId: grant.id, clientPk: client.id, appId: app.id, userId: input.userId, scopes: input.scopes },
      input.ttlSeconds ?? ACCESS_TOKEN_TTL_SECONDS);
    return { accessToken: set.access_token, refreshToken: set.refresh_token, expiresIn: set.expires_in };
  });
}
