import { phoneSchema } from '../../shared/identity/schemas.js';
import { defineCommand, flag, type Command } from './command.js';

/** How many messages `sms outbox` prints at most (the newest). */
const OUTBOX_LIMIT = 50;

/** sms outbox: the development SMS provider's messages (CONTRACTS.md "Hardware sales"). */
export const smsCommands: Record<string, Command> = {
  'sms outbox': defineCommand({
    summary: `The development SMS provider's messages to a phone, newest first (at most ${OUTBOX_LIMIT})`,
    prints: '{ messages: [{ phone, body, createdAt }] }',
    flags: { phone: flag(phoneSchema, 'phone in E.164', '+E164') },
    run: async (f, ctx) => {
      const provider = ctx.config.SMS_PROVIDER?.trim().toLowerCase();
      if (provider && provider !== 'dev') {
        ctx.warn(`SMS_PROVIDER is '${ctx.config.SMS_PROVIDER}': only the development provider writes the outbox, so it holds no message that provider sent`);
      }
      const rows = await ctx.db().selectFrom('sms_outbox').select(['phone', 'body', 'created_at'])
        .where('phone', '=', f.phone).orderBy('id', 'desc').limit(OUTBOX_LIMIT).execute();
      return { messages: rows.map((row) => ({ phone: row.phone, body: row.body, createdAt: row.created_at.toISOString() })) };
    },
  }),
};
