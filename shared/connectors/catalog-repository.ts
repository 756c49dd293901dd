import type { Selectable } from 'kysely';
import type { Database } from '../db/client.js';
import type { ConnectorsTable } from '../db/types.js';

// Kysely queries only, on the connector catalog (`connectors`): its rules live in catalog.ts.

export type ConnectorRow = Selectable<ConnectorsTable>;

/** Approved connectors only (a pending or rejected one is not listed). */
export async function listApprovedConnectors(db: Database): Promise<ConnectorRow[]> {
  return db.selectFrom('connectors').selectAll().where('status', '=', 'approved').orderBy('service').execute();
}

export async function findConnector(db: Database, service: string): Promise<ConnectorRow | undefined> {
  return db.selectFrom('connectors').selectAll().where('service', '=', service).executeTakeFirst();
}

/** The status, and the breaker when given (unchanged otherwise); undefined when no such connector. */
export async function updateConnectorStatus(
  db: Database, service: string, values: { status: ConnectorRow['status']; circuitBroken?: boolean },
): Promise<Pick<ConnectorRow, 'service' | 'status' | 'circuit_broken'> | undefined> {
  return db.updateTable('connectors')
    .set({ status: values.status, ...(values.circuitBroken === undefined ? {} : { circuit_broken: values.circuitBroken }), updated_at: new Date() })
    .where('service', '=', service)
    .returning(['service', 'status', 'circuit_broken'])
    .executeTakeFirst();
}
