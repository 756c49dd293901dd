import { fileURLToPath } from 'node:url';

/**
 * What a chaos run starts and kills: the script that starts the stack (it reads DATA_DIR and keeps
 * DATA_DIR/runtime.json naming its children's pids) and the kill targets, each the children one
 * kill picks from (the topology's "one API" is either of its two).
 */
export interface ChaosLayout {
  name: string;
  entry: string;
  targets: Record<string, readonly string[]>;
  /** Also keep a schedule firing every second through the kills (scripts/chaos/schedules.ts). */
  scheduleEverySecond?: boolean;
  /**
   * Also keep hardware order sagas paid by channel callbacks (scripts/chaos/orders.ts) and realtime
   * subscribers (scripts/chaos/realtime.ts) going through the kills.
   */
  ordersAndRealtime?: boolean;
}

/** `npm start` with its worker in a process of its own (START_WORKER=process, set by the stack). */
export const npmStartLayout: ChaosLayout = {
  name: 'npm start',
  entry: fileURLToPath(new URL('../dev.ts', import.meta.url)),
  targets: { postgres: ['postgres'], temporal: ['temporal'], worker: ['worker'] },
};

/** `npm run topology`: two APIs behind nginx, two workers, the Temporal server on PostgreSQL. */
export const topologyLayout: ChaosLayout = {
  name: 'topology',
  entry: fileURLToPath(new URL('../topology.ts', import.meta.url)),
  targets: { api: ['api-1', 'api-2'], worker: ['worker-1', 'worker-2'], temporal: ['temporal'], postgres: ['postgres'] },
  scheduleEverySecond: true,
  ordersAndRealtime: true,
};
