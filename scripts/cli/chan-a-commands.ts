import type { Command } from './commands.js';

/** chan-a account set: the official account an OAuth client id uses for in-app pay (CONTRACTS.md). */
export const chanACommands: Record<string, Command> = {};
