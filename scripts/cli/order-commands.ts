import type { Command } from './commands.js';

/** order prepare, order ship, order refund: the operator's side of the order saga. */
export const orderCommands: Record<string, Command> = {};
