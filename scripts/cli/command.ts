import type { Config } from '../../shared/config.js';
import type { Database } from '../../shared/db/client.js';

// What an operator command is. The command files (*-commands.ts) and commands.ts import this
// file; commands.ts gathers the command files: arrows point one way.

export interface CliContext {
  config: Config;
  db(): Database;
  temporalAddress(): string;
  warn(message: string): void;
}

export type Command = (flags: Record<string, string>, ctx: CliContext) => Promise<Record<string, unknown>>;
