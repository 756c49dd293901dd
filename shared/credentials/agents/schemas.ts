import { z } from 'zod';
import { GRANT_PATTERN } from '../agent-permissions.js';

/**
 * One grant of an agent's permission group: `METHOD /path` where a segment `*` matches one path
 * segment and a final `**` the rest (see agent-permissions.ts). Wildcards never sit inside a segment.
 */
export const grantSchema = z.string().trim()
  .regex(GRANT_PATTERN, 'expected `METHOD /path`, e.g. `GET /my` or `POST /api/released-app/*`')
  .refine((grant) => {
    const parts = grant.slice(grant.indexOf(' ') + 1).split('/').filter(Boolean);
    return parts.every((part, i) => !part.includes('*') || part === '*' || (part === '**' && i === parts.length - 1));
  }, 'a wildcard is a whole segment: `*` for one segment, `**` only as the last segment');

/** Grants are de-duplicated, order kept. */
export const permissionsSchema = z.array(grantSchema).max(100).transform((grants) => [...new Set(grants)]);

export const agentNameSchema = z.string().trim().min(1).max(200);
export const agentDescriptionSchema = z.string().trim().max(2000);
export const avatarUrlSchema = z.url({ protocol: /^https?$/, message: 'expected an http(s) URL' }).max(2048);

/** `"GET /my, POST /api/**"` (the CLI's --permissions) into a validated grant list. */
export const permissionListFlag = z.string()
  .transform((text) => text.split(',').map((g) => g.trim()).filter(Boolean))
  .pipe(permissionsSchema);
