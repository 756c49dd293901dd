import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../shared/errors.js';
import { findFreePort } from '../shared/ports.js';
import { until } from '../test/harness/until.js';
import { TemporalAvailability } from './availability.js';
import { startTemporalDevServer, type DevServerHandle } from './dev-server.js';

const rejection = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(() => { throw new Error('expected a rejection'); }, (error: unknown) => error);

const refusal = (availability: TemporalAvailability): unknown => {
  try {
    availability.assertAvailable();
    return null;
  } catch (error) {
    return error;
  }
};

const ourTimers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

// A dev server of this file's own, stopped and started again on the same port, with the API's
// kind of connection (native) kept open across the outage, as the API's is.
describe('TemporalAvailability through a Temporal outage', () => {
  let port: number;
  let server: DevServerHandle | null = null;
  let connection: NativeConnection;
  let client: Client;
  const start = async () => { server = await startTemporalDevServer({ namespace: 'default', port }); };
  const startWorkflow = () => client.workflow.start('anything', { taskQueue: 'nobody', workflowId: randomUUID() });

  beforeAll(async () => {
    port = await findFreePort();
    await start();
    connection = await NativeConnection.connect({ address: server!.address });
    client = new Client({ connection });
  });
  afterAll(async () => {
    await connection?.close();
    await server?.stop();
  });

  it('ignores errors that do not say Temporal is down', async () => {
    const availability = new TemporalAvailability(connection);
    const notFound = await rejection(client.workflow.getHandle(randomUUID()).describe());
    expect(notFound).toBeInstanceOf(WorkflowNotFoundError);
    expect([availability.reportFailure(notFound), availability.reportFailure(new Error('boom')), availability.available]).toEqual([false, false, true]);
    expect(refusal(availability)).toBeNull();
    availability.close();
  });

  it('after one failed call refuses at once, probes without holding the process, and recovers when the server is back', async () => {
    const lines: string[] = [];
    const availability = new TemporalAvailability(connection, { probeIntervalMs: 200, probeTimeoutMs: 500, log: (line) => lines.push(line) });
    const closedEarly = new TemporalAvailability(connection, { probeIntervalMs: 200, probeTimeoutMs: 500 });
    await startWorkflow();
    await server!.stop();

    // The first request pays for the client's retries (6-10 s measured) ...
    const outage = await rejection(startWorkflow());
    const timersBefore = ourTimers();
    expect(availability.reportFailure(outage)).toBe(true);
    expect(closedEarly.reportFailure(outage)).toBe(true);
    // ... the probe's timer never keeps the process alive (unref'd: not an active resource) ...
    expect(ourTimers()).toBe(timersBefore);
    closedEarly.close();

    // ... and the next ones are refused without touching Temporal.
    const refusedAt = performance.now();
    const refused = refusal(availability);
    expect(performance.now() - refusedAt).toBeLessThan(5);
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({
      status: 503, error: 'dependency_unavailable', message: 'Temporal is unavailable; retry shortly',
      extra: { dependency: 'temporal' }, headers: { 'retry-after': '5' },
    });

    // Probes fail while the server is down (several intervals), then one answers after the restart.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(availability.available).toBe(false);
    await start();
    const backAfter = performance.now();
    await until(async () => availability.available, 20_000, 'a probe to reach the restarted server');
    console.log(`[availability] probe saw the restarted server ${Math.round(performance.now() - backAfter)} ms after it served`);
    expect(refusal(availability)).toBeNull();
    expect(lines).toEqual([expect.stringMatching(/^Temporal unavailable \(Failed to start Workflow\); refusing/), 'Temporal answers again']);
    // The same connection serves again; a tracker that was closed stopped probing and kept its state.
    await startWorkflow();
    expect(closedEarly.available).toBe(false);
    availability.close();
  }, 60_000);
});
