import { z } from 'zod';
import type { Database } from '../db/client.js';
import type { FileStore } from '../storage/file-store.js';
import { objectKeys, putFileByContent } from '../storage/object-store.js';
import { requestOrigin } from './client-config.js';
import { findFirmwareFile, upsertFirmwareFile } from './repository.js';

// Device firmware (spec §4.10, CONTRACTS.md "Public configuration"): `asset register-firmware`
// stores the bytes by content and maps (model, module, file name) to them; the public route turns
// that triple into a short-lived signed URL of the object store.

export const firmwareModules = ['main', 'wifi'] as const;
export type FirmwareModule = (typeof firmwareModules)[number];

const noDotDot = (value: string) => !value.includes('..');

// Both names travel in URL paths and the file name in Content-Disposition: a closed alphabet
// (no `/`, `\`, NUL, quotes or spaces) keeps them inert everywhere, and `..` is refused outright.
export const firmwareModelSchema = z.string()
  .regex(/^[A-Za-z0-9._-]{1,64}$/, 'expected 1-64 letters, digits, ".", "_" or "-"')
  .refine(noDotDot, 'must not contain ".."');
export const firmwareModuleSchema = z.enum(firmwareModules, { message: 'expected main or wifi' });
export const firmwareFileNameSchema = z.string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$/, 'expected 1-200 letters, digits, ".", "_", "+" or "-", starting with a letter or digit')
  .refine(noDotDot, 'must not contain ".."');

export const firmwareRefSchema = z.object({ model: firmwareModelSchema, module: firmwareModuleSchema, fileName: firmwareFileNameSchema });
export type FirmwareRef = z.infer<typeof firmwareRefSchema>;

export interface FirmwareFile extends FirmwareRef { sha256: string; size: number }

export async function findFirmware(db: Database, ref: FirmwareRef): Promise<FirmwareFile | null> {
  const row = await findFirmwareFile(db, ref);
  return row ? { model: row.model, module: row.module, fileName: row.file_name, sha256: row.sha256, size: Number(row.size) } : null;
}

/**
 * Stores `file` under its content key, then points (model, module, file name) at it: registering
 * the same triple again replaces what it downloads. The bytes a replaced row pointed at stay in the
 * store: a signed URL handed out before the change still names them, until it expires.
 */
export async function registerFirmware(deps: { db: Database; store: FileStore }, input: FirmwareRef & { file: string }): Promise<FirmwareFile> {
  const { sha256, size } = await putFileByContent(deps.store, objectKeys.firmware, input.file);
  await upsertFirmwareFile(deps.db, { model: input.model, module: input.module, file_name: input.fileName, sha256, size });
  return { model: input.model, module: input.module, fileName: input.fileName, sha256, size };
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * The origin firmware links are built on: `PUBLIC_BASE_URL` when set (a path after it is kept),
 * else the request's own (`request.protocol` and `request.host` honour X-Forwarded-* from
 * TRUST_PROXY peers only). Always https except on loopback, so development works on 127.0.0.1 while
 * every real deployment hands out HTTPS links (spec §4.10). Null when the Host is not a host.
 */
export function downloadOrigin(publicBaseUrl: string | undefined, request: { protocol: string; host: string }): string | null {
  const base = publicBaseUrl ?? requestOrigin(request.protocol, request.host);
  if (!base) return null;
  const url = new URL(base);
  if (!LOOPBACK_HOSTS.has(url.hostname)) url.protocol = 'https:';
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}
