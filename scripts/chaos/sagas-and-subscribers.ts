// The order sagas and the realtime subscribers of a chaos run (layouts with `ordersAndRealtime`),
// in the run's order: the channels exist before the stack (its processes are configured with their
// keys), the drivers start with the run clients, stop with them, and are counted after the kills.
import type { Database } from '../../shared/db/client.js';
import { startChanAServer, type ChanAServer } from '../../test/harness/chan-a-server.js';
import { chanBKeys, type ChanBKeys } from '../../test/harness/chan-b-keys.js';
import { stackIdentity } from './identity.js';
import type { KillRecord } from './kill.js';
import { countOrders, ordersSettled, type OrderFigures } from './orders-count.js';
import { ORDER_TTL_SECONDS, prepareOrders, startOrderDrivers, type OrderDrivers, type OrderSetup } from './orders.js';
import { countSubscribers, runThroughOrigin, startSubscribers, subscriberToken, type RealtimeFigures, type Subscribers } from './realtime.js';
import type { ChaosStack } from './stack.js';
import { sleep } from './timing.js';

export interface SagasAndSubscribers {
  /** CHAN_A_* and CHAN_B_* for every process of the stack. */
  env: Record<string, string>;
  /** Subscribes the realtime clients (each joined once) and starts the buyers. */
  start(stack: ChaosStack, db: Database, seed: number): Promise<void>;
  /** Lets the buyers finish the order each is on. */
  stopDrivers(): Promise<void>;
  /** One last row change and the subscribers' rejoins; null when they never started. */
  countRealtime(stack: ChaosStack, kills: KillRecord[]): Promise<RealtimeFigures | null>;
  /** Waits for every unpaid order to be past its expiry and settled, then counts; null when no buyer started. */
  countOrders(stack: ChaosStack, db: Database): Promise<OrderFigures | null>;
  close(): Promise<void>;
}

export async function prepareSagasAndSubscribers(): Promise<SagasAndSubscribers> {
  const chanA: ChanAServer = await startChanAServer();
  const chanB: ChanBKeys = chanBKeys();
  let setup: OrderSetup | undefined;
  let drivers: OrderDrivers | undefined;
  let subscribers: Subscribers | undefined;
  return {
    env: { ...chanA.env, ...chanB.env },
    async start(stack, db, seed) {
      const { idp, anonKey } = await stackIdentity(stack.dataDir);
      const { teamId } = stack.info.demo;
      subscribers = await startSubscribers({ apiUrl: stack.info.apiUrl, anonKey, teamId }, await subscriberToken(db, idp, teamId));
      setup = await prepareOrders(db, idp);
      await sleep(2_000); // the APIs take the new settings (order TTL, rate limits) from their NOTIFY
      drivers = await startOrderDrivers({ apiUrl: stack.info.apiUrl, db, temporalAddress: stack.info.temporalAddress, chanA, chanB, setup, seed });
    },
    async stopDrivers() {
      await drivers?.stop();
    },
    async countRealtime(stack, kills) {
      if (!subscribers) return null;
      const { apiUrl, demo } = stack.info;
      return countSubscribers(subscribers, kills, () => runThroughOrigin({ apiUrl, apiKey: demo.apiKey, deploymentId: demo.deploymentId }));
    },
    async countOrders(stack, db) {
      if (!setup || !drivers) return null;
      // The last orders expire a TTL after the loop; their sagas then ask the channel and close them.
      await ordersSettled(db, setup.skuId, (ORDER_TTL_SECONDS + 90) * 1000);
      return countOrders({ db, temporalAddress: stack.info.temporalAddress, skuId: setup.skuId, chanA, records: drivers.records });
    },
    async close() {
      await subscribers?.stop().catch(() => {});
      await chanA.close().catch(() => {});
    },
  };
}
