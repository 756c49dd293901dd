import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { AppError } from '../../shared/errors.js';

export class CliError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/**
 * Flags CONTRACTS.md writes without a value (`sku add-tier … --standard`, `price create … --featured`,
 * `bluetooth-filter add … --requires-inventory-check`): given bare they mean `true`; `--standard false`
 * still works. Read them with `switchFlag`.
 */
const SWITCHES = new Set(['standard', 'featured', 'requires-inventory-check']);

/** A switch's value: bare (see SWITCHES) or explicit. */
export const switchFlag = z.enum(['true', 'false', 'yes', 'no', '1', '0'], { message: 'expected true or false' })
  .transform((value) => ['true', 'yes', '1'].includes(value));

/** The shared code's input errors (`invalid_input` naming a camelCase field) become errors naming the flag. */
export async function asFlagErrors<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof AppError && error.error === 'invalid_input' && typeof error.extra.field === 'string') {
      const flag = error.extra.field.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
      throw new CliError('invalid_flag', `Invalid --${flag}: ${error.message.replace(/^[^:]*: /, '')}`);
    }
    throw error;
  }
}

/** `--name value` pairs (also `--name=value`). Repeated, valueless (except switches) and positional arguments are refused. */
export function parseFlags(args: string[]): Record<string, string> {
  const flags: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith('--') || arg === '--') throw new CliError('invalid_argument', `Unexpected argument '${arg}': flags look like --name value`);
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    let value: string | undefined;
    if (eq !== -1) value = arg.slice(eq + 1);
    else if (i + 1 < args.length && !args[i + 1]!.startsWith('--')) value = args[++i];
    if (value === undefined && SWITCHES.has(name)) value = 'true';
    if (value === undefined) throw new CliError('missing_flag_value', `Flag --${name} needs a value`);
    if (name in flags) throw new CliError('invalid_flag', `Flag --${name} was given twice`);
    flags[name] = value;
  }
  return flags;
}

/** Validates flags against a zod object whose keys are the flag names; errors name the flag. */
export function readFlags<S extends z.ZodRawShape>(flags: Record<string, string>, shape: S): z.infer<z.ZodObject<S>> {
  for (const name of Object.keys(flags)) {
    if (!(name in shape)) throw new CliError('unknown_flag', `Unknown flag --${name} (expected: ${Object.keys(shape).map((k) => `--${k}`).join(', ')})`);
  }
  const parsed = z.object(shape).safeParse(flags);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const flag = `--${String(issue.path[0])}`;
    const missing = issue.code === 'invalid_type' && flags[String(issue.path[0])] === undefined;
    throw new CliError(missing ? 'missing_flag' : 'invalid_flag', missing ? `Missing required flag ${flag}` : `Invalid ${flag}: ${issue.message}`);
  }
  return parsed.data;
}

export const uuidFlag = z.uuid({ message: 'expected a UUID' });
export const positiveIntFlag = z.string().regex(/^\d+$/, 'expected a positive integer').transform(Number).pipe(z.number().int().positive().max(Number.MAX_SAFE_INTEGER));
export const jsonFlag = z.string().transform((text, ctx) => {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: `not valid JSON (${(error as Error).message})` });
    return z.NEVER;
  }
});

/** A JSON file named by `--<flag>`; a missing, unreadable or non-JSON file is a usage error naming the flag. */
export async function readJsonFile(flag: string, file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new CliError('invalid_flag', `Invalid --${flag}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new CliError('invalid_flag', `Invalid --${flag}: ${file} is not valid JSON (${(error as Error).message})`);
  }
}
