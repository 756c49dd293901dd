import { z } from 'zod';

// Response shapes of the connector routes (spec §2.4, §2.5, §7.7).

export const tags = ['connectors'];

export const success = <T extends z.ZodType>(data: T) => z.object({ success: z.literal(true), data });

/** `{ error: "<code>" }`, with `field` for `credential_field_missing`. */
export const connectorError = z.looseObject({ error: z.string() });

export const connectorView = z.object({
  id: z.uuid(), service: z.string(), displayName: z.string(), description: z.string(), categories: z.array(z.string()), authType: z.string(),
  credentialFields: z.array(z.object({
    key: z.string(), label: z.string(), type: z.string(), secret: z.boolean(), required: z.boolean(), helpUrl: z.string().optional(),
  })),
  supportedTriggers: z.array(z.string()), status: z.string(), circuitBroken: z.boolean(), creditMultiplier: z.number(),
});

export const connectionView = z.object({
  id: z.uuid(), service: z.string(), accountLabel: z.string(),
  credentialMask: z.record(z.string(), z.string()).describe('masked values per credential key; never plaintext or ciphertext'),
  status: z.enum(['pending', 'active', 'invalid', 'revoked']),
  lastVerifiedAt: z.string().nullable(), lastErrorCode: z.string().nullable(), createdAt: z.string(), updatedAt: z.string(),
});

export const errorResponses = { 400: connectorError, 401: connectorError, 403: connectorError, 404: connectorError, 429: connectorError, 503: connectorError };
