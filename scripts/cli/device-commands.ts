import type { Command } from './commands.js';

// To be written (issue 21).
export const deviceCommands: Record<string, Command> = {};
