import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { constantTimeEqual } from '../../crypto.js';
import type { ChanAConfig } from './config.js';
import { verifyChanASignature } from './signing.js';

/** Why a notification (or response) was refused; the checks run in this order. */
export type ChanAVerificationReason =
  | 'missing_headers' | 'unknown_serial' | 'timestamp_out_of_window' | 'bad_signature' | 'bad_body' | 'decrypt_failed';

export class ChanAVerificationError extends Error {
  constructor(readonly reason: ChanAVerificationReason, message: string) {
    super(message);
    this.name = 'ChanAVerificationError';
  }
}

export type ChanAHeaders = Record<string, string | string[] | undefined>;

/** A verified, decrypted notification (`TRANSACTION.SUCCESS`, `REFUND.SUCCESS`, …). */
export interface ChanANotification {
  id: string;
  eventType: string;
  createTime: string;
  summary?: string;
  /** The decrypted `resource` (a transaction or a refund, as protocols.md describes). */
  resource: Record<string, unknown>;
}

/** The encrypted `resource` object of a notification body. */
export interface ChanAEncryptedResource {
  algorithm: 'AEAD_AES_256_GCM';
  ciphertext: string;
  nonce: string;
  associated_data: string;
}

/** Same window as the reference SDK (wechatpay-go): |now − timestamp| ≥ 300 s is refused. */
export const CHAN_A_TIMESTAMP_WINDOW_SECONDS = 300;
const AEAD_ALGORITHM = 'AEAD_AES_256_GCM';
const GCM_TAG_BYTES = 16;

/**
 * Verifies a notification as the channel specifies and returns it decrypted; throws
 * ChanAVerificationError otherwise. `rawBody` must be the bytes as received (not re-serialised).
 * The caller still checks that the resource is about one of its orders (mchid, amount, …).
 */
export function verifyChanANotification(
  cfg: Pick<ChanAConfig, 'platformPublicKey' | 'platformPublicKeyId' | 'apiV3Key'>,
  headers: ChanAHeaders,
  rawBody: Buffer,
  nowMs = Date.now(),
): ChanANotification {
  verifyChanASignedMessage(cfg, headers, rawBody, nowMs);
  const body = parseNotificationBody(rawBody);
  return {
    id: body.id,
    eventType: body.event_type,
    createTime: body.create_time,
    ...(body.summary !== undefined ? { summary: body.summary } : {}),
    resource: decryptChanAResource(cfg.apiV3Key, body.resource),
  };
}

/**
 * The signature checks shared by notifications and API responses: the four `Wechatpay-*` headers,
 * the key serial, the timestamp window, then SHA256withRSA over `${timestamp}\n${nonce}\n${rawBody}\n`.
 */
export function verifyChanASignedMessage(
  cfg: Pick<ChanAConfig, 'platformPublicKey' | 'platformPublicKeyId'>,
  headers: ChanAHeaders,
  rawBody: Buffer,
  nowMs = Date.now(),
): void {
  const timestamp = header(headers, 'wechatpay-timestamp');
  const nonce = header(headers, 'wechatpay-nonce');
  const signature = header(headers, 'wechatpay-signature');
  const serial = header(headers, 'wechatpay-serial');
  if (!timestamp || !nonce || !signature || !serial) {
    throw new ChanAVerificationError('missing_headers', 'Wechatpay-Timestamp, -Nonce, -Signature and -Serial are required');
  }
  if (!constantTimeEqual(serial, cfg.platformPublicKeyId)) {
    throw new ChanAVerificationError('unknown_serial', `signed with a key we do not hold: ${serial.slice(0, 64)}`);
  }
  if (!/^\d{1,15}$/.test(timestamp) || Math.abs(nowMs - Number(timestamp) * 1000) >= CHAN_A_TIMESTAMP_WINDOW_SECONDS * 1000) {
    throw new ChanAVerificationError('timestamp_out_of_window', `timestamp ${timestamp.slice(0, 32)} is not within ${CHAN_A_TIMESTAMP_WINDOW_SECONDS} s of now`);
  }
  if (!verifyChanASignature(cfg.platformPublicKey, timestamp, nonce, rawBody, signature)) {
    throw new ChanAVerificationError('bad_signature', 'Wechatpay-Signature does not verify with the platform public key');
  }
}

interface NotificationBody {
  id: string;
  create_time: string;
  event_type: string;
  summary?: string;
  resource: ChanAEncryptedResource;
}

function parseNotificationBody(rawBody: Buffer): NotificationBody {
  let body: unknown;
  try {
    body = JSON.parse(rawBody.toString('utf8'));
  } catch {
    throw new ChanAVerificationError('bad_body', 'the body is not JSON');
  }
  if (!isRecord(body) || typeof body.id !== 'string' || typeof body.event_type !== 'string'
    || typeof body.create_time !== 'string' || (body.summary !== undefined && typeof body.summary !== 'string')) {
    throw new ChanAVerificationError('bad_body', 'id, event_type and create_time are required');
  }
  const resource = body.resource;
  if (!isRecord(resource) || resource.algorithm !== AEAD_ALGORITHM || typeof resource.ciphertext !== 'string'
    || typeof resource.nonce !== 'string' || (resource.associated_data !== undefined && typeof resource.associated_data !== 'string')) {
    throw new ChanAVerificationError('bad_body', `resource must be ${AEAD_ALGORITHM} with ciphertext and nonce`);
  }
  return body as unknown as NotificationBody;
}

/** AES-256-GCM open of a resource: iv = nonce (UTF-8), AAD = associated_data, tag = last 16 bytes. */
export function decryptChanAResource(
  apiV3Key: Buffer,
  resource: Pick<ChanAEncryptedResource, 'ciphertext' | 'nonce'> & { associated_data?: string },
): Record<string, unknown> {
  const sealed = Buffer.from(resource.ciphertext, 'base64');
  if (sealed.length <= GCM_TAG_BYTES || resource.nonce.length === 0) {
    throw new ChanAVerificationError('decrypt_failed', 'ciphertext too short or nonce empty');
  }
  let plaintext: string;
  try {
    const decipher = createDecipheriv('aes-256-gcm', apiV3Key, Buffer.from(resource.nonce, 'utf8'), { authTagLength: GCM_TAG_BYTES });
    decipher.setAAD(Buffer.from(resource.associated_data ?? '', 'utf8'));
    decipher.setAuthTag(sealed.subarray(sealed.length - GCM_TAG_BYTES));
    plaintext = Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - GCM_TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new ChanAVerificationError('decrypt_failed', 'the resource does not decrypt with the API v3 key');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(plaintext);
  } catch {
    throw new ChanAVerificationError('decrypt_failed', 'the decrypted resource is not JSON');
  }
  if (!isRecord(parsed)) throw new ChanAVerificationError('decrypt_failed', 'the decrypted resource is not a JSON object');
  return parsed;
}

/** Seals a resource as the channel does (for the test server and tests). Nonce: 12 random characters. */
export function encryptChanAResource(
  apiV3Key: Buffer,
  plaintext: object,
  opts: { nonce?: string; associatedData?: string } = {},
): ChanAEncryptedResource {
  const nonce = opts.nonce ?? randomBytes(6).toString('hex');
  const associatedData = opts.associatedData ?? '';
  const cipher = createCipheriv('aes-256-gcm', apiV3Key, Buffer.from(nonce, 'utf8'), { authTagLength: GCM_TAG_BYTES });
  cipher.setAAD(Buffer.from(associatedData, 'utf8'));
  const encrypted = Buffer.concat([cipher.update(JSON.stringify(plaintext), 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return { algorithm: AEAD_ALGORITHM, ciphertext: encrypted.toString('base64'), nonce, associated_data: associatedData };
}

/** Case-insensitive header lookup; a repeated header (an array of several values) counts as absent. */
function header(headers: ChanAHeaders, lowerName: string): string | undefined {
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() !== lowerName) continue;
    const single = Array.isArray(value) ? (value.length === 1 ? value[0] : undefined) : value;
    return single?.trim() || undefined;
  }
  return undefined;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
