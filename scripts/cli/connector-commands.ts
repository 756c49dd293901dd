import type { Command } from './commands.js';

// To be written (issue 23).
export const connectorCommands: Record<string, Command> = {};
