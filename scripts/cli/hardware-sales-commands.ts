import type { Command } from './commands.js';

/** sku create, sku add-tier, discount-code create (CONTRACTS.md "Hardware sales"). */
export const hardwareSalesCommands: Record<string, Command> = {};
