import type { Command } from './commands.js';

/** sms outbox: the development SMS provider's messages. */
export const smsCommands: Record<string, Command> = {};
