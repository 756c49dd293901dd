import { phoneSchema } from '../../shared/identity/schemas.js';
import type { Command } from './command.js';
import { readFlags } from './flags.js';

/** How many messages `sms outbox` prints at most (the newest). */
const OUTBOX_LIMIT = 50;

/** sms outbox: the development SMS provider's messages (CONTRACTS.md "Hardware sales"). */
export const smsCommands: Record<string, Command> = {
  'sms outbox': async (flags, ctx) => {
    const f = readFlags(flags, { phone: phoneSchema });
    const provider = ctx.config.SMS_PROVIDER?.trim().toLowerCase();
    if (provider && provider !== 'dev') {
      ctx.warn(`SMS_PROVIDER is '${ctx.config.SMS_PROVIDER}': only the development provider writes the outbox, so it holds no message that provider sent`);
    }
    const rows = await ctx.db().selectFrom('sms_outbox').select(['phone', 'body', 'created_at'])
      .where('phone', '=', f.phone).orderBy('id', 'desc').limit(OUTBOX_LIMIT).execute();
    return { messages: rows.map((row) => ({ phone: row.phone, body: row.body, createdAt: row.created_at.toISOString() })) };
  },
};
