import type { Database } from '../db/client.js';
import { notFound } from '../errors.js';
import { newId } from '../ids.js';
import { findActiveTeam } from '../identity/repository.js';
import { addToCreditBalance, insertCreditTransaction } from './repository.js';

/** Adds milli-credits to a team: ledger row and balance in one transaction. */
export async function grantCredits(db: Database, input: { teamId: string; amountMilli: number; reason?: string; reference?: string }) {
  return db.transaction().execute(async (trx) => {
    if (!(await findActiveTeam(trx, input.teamId))) throw notFound(`Team ${input.teamId}`);
    await insertCreditTransaction(trx, {
      id: newId(), team_id: input.teamId, amount_milli: input.amountMilli,
      reason: input.reason ?? 'operator_grant', reference: input.reference ?? null, created_by: null,
    });
    return { teamId: input.teamId, balance: await addToCreditBalance(trx, input.teamId, input.amountMilli) };
  });
}
