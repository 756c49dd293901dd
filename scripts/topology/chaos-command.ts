import { runChaosCommand } from '../chaos/command.js';
import { topologyLayout } from '../chaos/layout.js';

/**
 * `npm run topology -- --chaos`: the production layout under load while one API, one worker, the
 * Temporal server and PostgreSQL are each SIGKILLed twice (8 kills; the supervisor restarts each),
 * then the same count as `npm run chaos`.
 */
export const runTopologyChaosCommand = (argv: string[]): Promise<number> =>
  runChaosCommand({ invocation: 'npm run topology -- --chaos', defaults: { layout: topologyLayout, kills: 2 * Object.keys(topologyLayout.targets).length } }, argv);
