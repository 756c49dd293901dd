import type { Database } from '../db/client.js';
import { notFound } from '../errors.js';
import { newId } from '../ids.js';
import { findActiveTeam } from '../identity/repository.js';
import { addToCreditBalance, findCreditBalance, insertCreditTransaction } from './repository.js';

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

/** A team's balance in milli-credits, as grantCredits reports it; null when the team does not exist (or is deleted). */
export async function readCreditBalance(db: Database, teamId: string): Promise<{ teamId: string; balance: number } | null> {
  if (!(await findActiveTeam(db, teamId))) return null;
  // Every team gets its balance row when it is created; a missing row still means nothing granted.
  return { teamId, balance: (await findCreditBalance(db, teamId))?.balance_milli ?? 0 };
}
