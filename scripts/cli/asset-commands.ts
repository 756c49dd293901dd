import type { Command } from './commands.js';

// To be written (issue 21).
export const assetCommands: Record<string, Command> = {};
