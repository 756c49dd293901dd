// Operator CLI: `npm run --silent cli -- <command> [--flag value ...]` (CONTRACTS.md).
// Success: one JSON object on stdout, exit 0. Failure: {"error","message"} on stderr, exit 1 (2 for usage).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../shared/config.js';
import { createDb, type Database } from '../shared/db/client.js';
import { AppError } from '../shared/errors.js';
import { commands, type CliContext } from './cli/commands.js';
import { CliError, parseFlags } from './cli/flags.js';
import { renderCommandHelp, renderCommandList } from './cli/usage.js';

function fail(error: string, message: string, exitCode: number): never {
  process.stderr.write(`${JSON.stringify({ error, message })}\n`);
  process.exit(exitCode);
}

/** What a running `npm start` wrote, so the CLI reaches its embedded database without configuration. */
function devRuntime(dataDir: string): { databaseUrl?: string; temporalAddress?: string } {
  const file = path.join(dataDir, 'runtime.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { databaseUrl?: string; temporalAddress?: string }) : {};
}

/** The longest leading words that name a command: `chan-a account set`, `sku create`, `doctor`. */
const commandName = (words: string[]): string =>
  [3, 2, 1].map((count) => words.slice(0, count).join(' ')).find((candidate) => commands[candidate]) ?? '';

/** Help on stdout, exit 0: `--help`/`help` list the commands (`help credits` those under it); `help X`/`X --help` show X's flags. */
function help(words: string[]): never {
  const name = commandName(words);
  const group = words.join(' ');
  if (name) process.stdout.write(renderCommandHelp(name, commands[name]!));
  else if (!words.length || Object.keys(commands).some((known) => known.startsWith(`${group} `))) process.stdout.write(renderCommandList(commands, words.length ? group : undefined));
  else fail('unknown_command', `Unknown command '${group}'. Commands: ${Object.keys(commands).join(', ')}`, 2);
  process.exit(0);
}

async function main(argv: string[]): Promise<void> {
  if (argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') help(argv.slice(1));
  const name = commandName(argv);
  if (name && (argv.includes('--help') || argv.includes('-h'))) help(name.split(' '));
  const command = commands[name];
  if (!command) {
    fail('unknown_command', `Unknown command '${argv.slice(0, 2).join(' ')}'. Commands: ${Object.keys(commands).join(', ')}`, 2);
  }
  const config = loadConfig();
  let flags: Record<string, string>;
  try {
    flags = parseFlags(argv.slice(name.split(' ').length));
  } catch (error) {
    fail((error as CliError).code, (error as Error).message, 2);
  }

  let db: Database | null = null;
  const ctx: CliContext = {
    config,
    db() {
      const url = config.DATABASE_URL ?? devRuntime(config.DATA_DIR).databaseUrl;
      if (!url) throw new CliError('no_database', 'DATABASE_URL is not set and no `npm start` is running');
      db ??= createDb(url, { poolSize: 2, applicationName: 'wfapp-cli' });
      return db;
    },
    temporalAddress() {
      const address = config.TEMPORAL_ADDRESS ?? devRuntime(config.DATA_DIR).temporalAddress;
      if (!address) throw new CliError('no_temporal', 'TEMPORAL_ADDRESS is not set and no `npm start` is running');
      return address;
    },
    warn: (message) => process.stderr.write(`warning: ${message}\n`),
  };
  try {
    const result = await command(flags, ctx);
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } catch (error) {
    if (error instanceof CliError) fail(error.code, error.message, 2);
    if (error instanceof AppError) fail(error.error, error.message, 1);
    fail('internal_error', (error as Error).message, 1);
  } finally {
    await (db as Database | null)?.destroy();
  }
}

await main(process.argv.slice(2));
