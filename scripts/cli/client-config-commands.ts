import type { Command } from './commands.js';

// To be written (issue 21).
export const clientConfigCommands: Record<string, Command> = {};
