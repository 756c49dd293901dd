import type { NativeConnection } from '@temporalio/worker';
import { supervise, type Supervisor } from '../shared/supervisor.js';
import { checkTemporal } from '../temporal/connection.js';
import type { RunningWorkers } from './start.js';

/**
 * In-process workers that come back by themselves. The SDK's Worker rides out Temporal being down
 * (measured: 100 s of connection refused, polls retried, polling again once the server was back),
 * but it shuts down for good on a poll error it deems fatal (namespace not found, permission
 * denied) or on a failure of its own, while the process around it stays up and polls nothing:
 * then we create the workers again, with backoff, on the same connection (which reconnects by
 * itself). Used by `npm start` (inline worker) and `npm run worker`, which recovers in-process
 * rather than counting on its container being restarted.
 */
export function superviseWorkers(options: {
  start(): Promise<RunningWorkers>;
  connection: NativeConnection;
  log(line: string): void;
}): Promise<Supervisor> {
  return supervise({
    name: 'worker',
    log: options.log,
    async start() {
      // startWorkers opens a database pool and a LISTEN connection before it meets Temporal: ask
      // Temporal first, so retries during an outage do not open and close them every time.
      await checkTemporal(options.connection, 5_000);
      const running = await options.start();
      return { pid: null, exited: running.done, stop: () => running.shutdown() };
    },
  });
}
