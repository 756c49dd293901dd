import { z } from 'zod';
import type { Config } from '../../shared/config.js';
import type { Database } from '../../shared/db/client.js';
import { readFlags } from './flags.js';

// What an operator command is. The command files (*-commands.ts) and commands.ts import this
// file; commands.ts gathers the command files: arrows point one way.
//
// A command is defined once: its summary, what it prints, and its flags (each a zod schema, the
// value it takes and one line about it). The runner validates flags against that definition, and
// `--help` and the README's table (scripts/cli/usage.ts) are rendered from it, so none can drift.

export interface CliContext {
  config: Config;
  db(): Database;
  temporalAddress(): string;
  warn(message: string): void;
}

/** One flag: the schema its value must pass (an optional schema makes the flag optional), one line about it, its value's placeholder. */
export interface FlagSpec<S extends z.ZodType = z.ZodType> {
  schema: S;
  about: string;
  value?: string;
}

type FlagSpecs = Record<string, FlagSpec>;
type ParsedFlags<F extends FlagSpecs> = z.infer<z.ZodObject<{ [K in keyof F]: F[K]['schema'] }>>;

/**
 * A command: called with the raw `--name value` pairs, it validates them against `flags` (errors
 * name the flag) and runs. Callable, so tests and other scripts run a command as a function.
 */
export type Command = ((flags: Record<string, string>, ctx: CliContext) => Promise<Record<string, unknown>>) & {
  /** One line for `--help`'s list. */
  summary: string;
  /** What stdout holds on success, e.g. `{ id, email }`. */
  prints: string;
  flags: FlagSpecs;
};

/**
 * A flag of a command. `value` is the placeholder usage shows (`TEAM_ID`); left out, an enum
 * shows its choices (`owner|admin|member`) and anything else the flag's name in capitals.
 */
export function flag<S extends z.ZodType>(schema: S, about: string, value?: string): FlagSpec<S> {
  return { schema, about, value };
}

/** The value usage shows for flag `name`: `--team TEAM_ID`, `--role owner|admin|member`. */
export function placeholder(name: string, spec: FlagSpec): string {
  if (spec.value) return spec.value;
  const inner = spec.schema instanceof z.ZodOptional ? (spec.schema.unwrap() as z.ZodType) : spec.schema;
  if (inner instanceof z.ZodEnum) return inner.options.join('|');
  return name.toUpperCase().replaceAll('-', '_');
}

/** True when the command runs without this flag (its schema accepts it missing). */
export const isRequired = (spec: FlagSpec): boolean => !spec.schema.safeParse(undefined).success;

export function defineCommand<F extends FlagSpecs>(definition: {
  summary: string;
  prints: string;
  flags: F;
  run(flags: ParsedFlags<F>, ctx: CliContext): Promise<Record<string, unknown>>;
}): Command {
  const shape = Object.fromEntries(Object.entries(definition.flags).map(([name, spec]) => [name, spec.schema])) as { [K in keyof F]: F[K]['schema'] };
  // Async, so a flag refused by readFlags is a rejected promise like every other failure of a command.
  const run = async (flags: Record<string, string>, ctx: CliContext) => definition.run(readFlags(flags, shape) as ParsedFlags<F>, ctx);
  return Object.assign(run, { summary: definition.summary, prints: definition.prints, flags: definition.flags });
}
