// The chaos command line, shared by `npm run chaos` (npm start's layout) and `npm run topology --
// --chaos` (the production layout): flags, the run, the table and summary line, the JSON, the exit
// code (1 on any violation: lost runs, double charges, charges for nothing, stream gaps, 500s; 2 on
// a usage error).
import { writeFile } from 'node:fs/promises';
import { formatTable, violationCount, type ChaosFigures } from './report.js';
import { defaultChaosOptions, runChaos, type ChaosOptions } from './run.js';

export interface ChaosCommand {
  /** How the command is invoked, for the usage line. */
  invocation: string;
  /** The options this command starts from (its layout, its number of kills). */
  defaults: Partial<ChaosOptions>;
}

class UsageError extends Error {}

function parseArgs(argv: string[]): { options: Partial<ChaosOptions>; jsonPath?: string; rounds: number } {
  const options: Partial<ChaosOptions> = {};
  let jsonPath: string | undefined;
  let rounds = 1;
  const integer = (flag: string, value: string | undefined, min: number) => {
    if (value === undefined || !/^\d+$/.test(value) || Number(value) < min) throw new UsageError(`${flag} needs an integer ≥ ${min}`);
    return Number(value);
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    if (flag === '--kills') options.kills = integer(flag, argv[++i], 0);
    else if (flag === '--seed') options.seed = integer(flag, argv[++i], 0);
    else if (flag === '--clients') options.clients = integer(flag, argv[++i], 1);
    else if (flag === '--rounds') rounds = integer(flag, argv[++i], 1);
    else if (flag === '--json') {
      jsonPath = argv[++i];
      if (!jsonPath) throw new UsageError('--json needs a path');
    } else if (flag === '--keep') options.keepDataDir = 'always';
    else throw new UsageError(`unknown flag ${flag}`);
  }
  return { options, jsonPath, rounds };
}

/** One line a CI log or a person can read at a glance. */
export function summaryLine(figures: ChaosFigures, round: number, rounds: number): string {
  const violations = violationCount(figures);
  return `chaos ${figures.layout} round ${round}/${rounds}: ${figures.kills.done} kills, ${figures.runs.accepted} runs accepted, ` +
    `${violations === 0 ? 'no violations' : `${violations} VIOLATIONS`}`;
}

/** Runs the command; resolves to the process's exit code. `--rounds N` runs N independent chaos runs in a row. */
export async function runChaosCommand(command: ChaosCommand, argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`${error.message}\nusage: ${command.invocation} [--kills N] [--seed S] [--clients C] [--rounds N] [--json PATH] [--keep]\n`);
    return 2;
  }
  const all: ChaosFigures[] = [];
  for (let round = 1; round <= parsed.rounds; round++) {
    // Each round its own kill order: the given seed (or the default, from the clock) plus the round.
    const seed = (parsed.options.seed ?? defaultChaosOptions.seed) + round - 1;
    const figures = await runChaos({ ...defaultChaosOptions, ...command.defaults, ...parsed.options, seed });
    all.push(figures);
    process.stdout.write(`\n${formatTable(figures)}\n${summaryLine(figures, round, parsed.rounds)}\n`);
  }
  if (parsed.jsonPath) await writeFile(parsed.jsonPath, `${JSON.stringify(parsed.rounds === 1 ? all[0] : all, null, 2)}\n`);
  return all.some((figures) => violationCount(figures) > 0) ? 1 : 0;
}
