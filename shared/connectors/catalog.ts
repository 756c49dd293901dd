import type { Database } from '../db/client.js';
import type { ConnectorCredentialField } from '../db/types.js';
import { AppError } from '../errors.js';
import { findConnector, updateConnectorStatus, type ConnectorRow } from './catalog-repository.js';

// The connector catalog is data (`connectors`, seeded with `imap_mail`); the operator approves,
// rejects and trips the circuit breaker with `connector set` (docs/connectors.md).

export const connectorStatuses = ['approved', 'pending', 'rejected'] as const;
export type ConnectorStatus = (typeof connectorStatuses)[number];

/** Spec §2.4. */
export interface ConnectorView {
  id: string; service: string; displayName: string; description: string; categories: string[]; authType: string;
  credentialFields: ConnectorCredentialField[]; supportedTriggers: string[]; status: ConnectorStatus; circuitBroken: boolean;
  creditMultiplier: number;
}

export const toConnectorView = (row: ConnectorRow): ConnectorView => ({
  id: row.id, service: row.service, displayName: row.display_name, description: row.description, categories: row.categories,
  authType: row.auth_type, credentialFields: row.credential_fields, supportedTriggers: row.supported_triggers, status: row.status,
  circuitBroken: row.circuit_broken, creditMultiplier: Number(row.credit_multiplier),
});

/**
 * A connector a user may connect to now: known (404), approved (403), breaker closed (503).
 * Spec §7.7's order: an unknown service says nothing about approval.
 */
export async function requireUsableConnector(db: Database, service: string): Promise<ConnectorRow> {
  const connector = await findConnector(db, service);
  if (!connector) throw new AppError(404, 'connector_not_found', `No connector '${service}'`);
  if (connector.status !== 'approved') throw new AppError(403, 'connector_not_approved', `Connector '${service}' is not listed`);
  if (connector.circuit_broken) throw new AppError(503, 'connector_circuit_broken', `Connector '${service}' is temporarily disabled`);
  return connector;
}

/** `connector set`: the status, and the breaker when given (unchanged otherwise). */
export async function setConnector(
  db: Database, input: { service: string; status: ConnectorStatus; circuitBroken?: boolean },
): Promise<{ service: string; status: ConnectorStatus; circuitBroken: boolean }> {
  const row = await updateConnectorStatus(db, input.service, { status: input.status, circuitBroken: input.circuitBroken });
  if (!row) throw new AppError(404, 'connector_not_found', `No connector '${input.service}'`);
  return { service: row.service, status: row.status, circuitBroken: row.circuit_broken };
}
