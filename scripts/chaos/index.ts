// `npm run chaos [-- --kills N] [--seed S] [--clients C] [--rounds N] [--json PATH] [--keep]`: starts
// the embedded stack (`npm start`), drives runs while SIGKILLing PostgreSQL, Temporal and the worker
// at random moments, then prints what happened to every run (scripts/chaos/command.ts).
import { runChaosCommand } from './command.js';

process.exit(await runChaosCommand({ invocation: 'npm run chaos --', defaults: {} }, process.argv.slice(2)));
