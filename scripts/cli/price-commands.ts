import type { Command } from './commands.js';

// To be written (issue 21).
export const priceCommands: Record<string, Command> = {};
