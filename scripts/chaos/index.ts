// `npm run chaos [-- --kills N] [--seed S] [--clients C] [--json PATH] [--keep]`: starts the embedded
// stack, drives runs while SIGKILLing PostgreSQL, Temporal and the worker at random moments, then
// prints what happened to every run. Exit 1 on any violation (lost runs, double charges, charges
// for nothing, stream gaps, 500s, …), 2 on a usage error.
import { writeFile } from 'node:fs/promises';
import { formatTable, violationCount } from './report.js';
import { defaultChaosOptions, runChaos, type ChaosOptions } from './run.js';

function usage(message: string): never {
  process.stderr.write(`${message}\nusage: npm run chaos -- [--kills N] [--seed S] [--clients C] [--json PATH] [--keep]\n`);
  process.exit(2);
}

function parseArgs(argv: string[]): { options: Partial<ChaosOptions>; jsonPath?: string } {
  const options: Partial<ChaosOptions> = {};
  let jsonPath: string | undefined;
  const integer = (flag: string, value: string | undefined, min: number) => {
    if (value === undefined || !/^\d+$/.test(value) || Number(value) < min) usage(`${flag} needs an integer ≥ ${min}`);
    return Number(value);
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    if (flag === '--kills') options.kills = integer(flag, argv[++i], 0);
    else if (flag === '--seed') options.seed = integer(flag, argv[++i], 0);
    else if (flag === '--clients') options.clients = integer(flag, argv[++i], 1);
    else if (flag === '--json') jsonPath = argv[++i] ?? usage('--json needs a path');
    else if (flag === '--keep') options.keepDataDir = 'always';
    else usage(`unknown flag ${flag}`);
  }
  return { options, jsonPath };
}

const { options, jsonPath } = parseArgs(process.argv.slice(2));
const figures = await runChaos({ ...defaultChaosOptions, ...options });
process.stdout.write(`\n${formatTable(figures)}\n`);
if (jsonPath) await writeFile(jsonPath, `${JSON.stringify(figures, null, 2)}\n`);
process.exit(violationCount(figures) ? 1 : 0);
