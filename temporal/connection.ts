import { Client, Connection } from '@temporalio/client';

export interface TemporalClientHandle {
  client: Client;
  connection: Connection;
  close(): Promise<void>;
}

export async function connectTemporalClient(address: string, namespace: string): Promise<TemporalClientHandle> {
  const connection = await Connection.connect({ address, connectTimeout: '5 seconds' });
  const client = new Client({ connection, namespace });
  return { client, connection, close: () => connection.close() };
}

/** True when the frontend answers a health check within `timeoutMs`. Used by /readyz. */
export async function checkTemporal(connection: Connection, timeoutMs = 2_000): Promise<void> {
  await connection.withDeadline(Date.now() + timeoutMs, () =>
    connection.workflowService.getSystemInfo({}),
  );
}
