import { z } from 'zod';
import type { Database } from '../db/client.js';
import type { ConnectionStatus } from '../db/types.js';
import { AppError } from '../errors.js';
import { isUuid, newId } from '../ids.js';
import { SecretsKeyMissingError, type SecretKeyRing } from '../secrets/key-ring.js';
import { requireUsableConnector } from './catalog.js';
import { findUserConnection, insertConnection, listUserConnections, markConnectionRevoked, type ConnectionRow } from './connections-repository.js';
import { maskCredentials, maskUsername } from './mask.js';
import { connectorServices } from './services.js';

// A user's account at a connector (spec §2.5, §3.1, §4.12; docs/connectors.md). Credentials are
// sealed field by field with the row id and the field name as associated data, so a sealed value
// copied to another row or field does not open; responses carry only the stored mask.

export type { ConnectionRow };

/** Spec §2.5. */
export interface ConnectionView {
  id: string; service: string; accountLabel: string; credentialMask: Record<string, string>; status: ConnectionStatus;
  lastVerifiedAt: string | null; lastErrorCode: string | null; createdAt: string; updatedAt: string;
}

export const toConnectionView = (row: ConnectionRow): ConnectionView => ({
  id: row.id, service: row.service, accountLabel: row.account_label, credentialMask: row.credential_mask, status: row.status,
  lastVerifiedAt: row.last_verified_at?.toISOString() ?? null, lastErrorCode: row.last_error_code,
  createdAt: row.created_at.toISOString(), updatedAt: row.updated_at.toISOString(),
});

/** The associated data of one sealed field. */
export const sealContext = (connectionId: string, field: string) => `connector_connections:${connectionId}:${field}`;

export const createConnectionBody = z.object({
  service: z.string().min(1).max(100),
  credentials: z.record(z.string().max(100), z.unknown()),
  accountLabel: z.string().max(200).optional(),
});
export type CreateConnectionBody = z.infer<typeof createConnectionBody>;

const MAX_CREDENTIAL_LENGTH = 4096;

export const encryptionNotConfigured = () =>
  new AppError(503, 'encryption_not_configured', 'The server has no encryption key (SECRETS_KEY), so credentials cannot be stored');

/**
 * The credential values of a create body, checked against the catalog's fields: unknown keys and
 * non-string values are a bad body; a required field absent or blank is `credential_field_missing`
 * (the field named in `field`); then the connector's own rules (e.g. the IMAP port).
 */
function credentialValues(fields: readonly { key: string; required: boolean }[], credentials: Record<string, unknown>, service: string): Record<string, string> {
  const known = new Set(fields.map((f) => f.key));
  const unknown = Object.keys(credentials).find((key) => !known.has(key));
  if (unknown !== undefined) throw new AppError(400, 'invalid_body', `credentials.${unknown} is not a credential field of ${service}`);
  const values: Record<string, string> = {};
  for (const field of fields) {
    const value = credentials[field.key];
    if (value !== undefined && value !== null && typeof value !== 'string') throw new AppError(400, 'invalid_body', `credentials.${field.key} must be a string`);
    if (typeof value === 'string' && value.length > MAX_CREDENTIAL_LENGTH) throw new AppError(400, 'invalid_body', `credentials.${field.key} is too long`);
    if (typeof value === 'string' && value.trim() !== '') values[field.key] = value;
    else if (field.required) throw new AppError(400, 'credential_field_missing', `credentials.${field.key} is required`, { field: field.key });
  }
  return values;
}

/**
 * Create (spec §3.1 first row): the connector usable, the fields complete and well formed, no
 * network; the row starts `pending`. Without a sealing key nothing is written (503).
 */
export async function createConnection(deps: { db: Database; secrets: SecretKeyRing }, userId: string, body: CreateConnectionBody): Promise<ConnectionRow> {
  const connector = await requireUsableConnector(deps.db, body.service);
  const service = connectorServices[connector.service];
  if (!service) throw new AppError(403, 'connector_not_approved', `Connector '${connector.service}' has no implementation on this server`);
  const values = credentialValues(connector.credential_fields, body.credentials, connector.service);
  service.validate(values);
  if (!deps.secrets.currentKeyId) throw encryptionNotConfigured();

  const id = newId();
  let sealed: Record<string, string>;
  try {
    sealed = Object.fromEntries(Object.entries(values).map(([key, value]) => [key, deps.secrets.seal(value, sealContext(id, key))]));
  } catch (error) {
    if (error instanceof SecretsKeyMissingError) throw encryptionNotConfigured();
    throw error;
  }
  const mask = maskCredentials(connector.credential_fields, values);
  const label = body.accountLabel?.trim() || defaultLabel(connector.display_name, values);
  return insertConnection(deps.db, {
    id, user_id: userId, service: connector.service, account_label: label, status: 'pending',
    credentials_sealed: JSON.stringify(sealed), credential_mask: JSON.stringify(mask),
  });
}

/** Without a label: the connector's name and the masked user name (never the name in clear). */
const defaultLabel = (displayName: string, values: Record<string, string>) =>
  (values.username ? `${displayName}: ${maskUsername(values.username)}` : displayName);

/** The caller's connections, newest first; revoked ones stay listed (spec §3.1). */
export async function listConnections(db: Database, userId: string): Promise<ConnectionRow[]> {
  return listUserConnections(db, userId);
}

export const connectionNotFound = () => new AppError(404, 'connection_not_found', 'Connection not found');

/** The caller's connection: missing, malformed and someone else's are the same 404 (spec §7.7). */
export async function findOwnConnection(db: Database, userId: string, connectionId: string): Promise<ConnectionRow> {
  if (!isUuid(connectionId)) throw connectionNotFound();
  const row = await findUserConnection(db, userId, connectionId);
  if (!row) throw connectionNotFound();
  return row;
}

/**
 * Delete: the row stays, `revoked`, and its sealed credentials are dropped (a revoked connection is
 * never used again, so nothing should be able to open them). Deleting again changes nothing.
 */
export async function revokeConnection(db: Database, userId: string, connectionId: string): Promise<void> {
  const row = await findOwnConnection(db, userId, connectionId);
  if (row.status === 'revoked') return;
  await markConnectionRevoked(db, row.id);
}
