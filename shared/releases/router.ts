import { z } from 'zod';
import type { ApiSchemaField } from '../documents/graph.js';

// A release version's router tree and how a gateway request finds its endpoint in it. Pure: the
// management API validates with it on publish, the gateway matches with it on every call.

export const RELEASE_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type ReleaseMethod = (typeof RELEASE_METHODS)[number];

const STATIC_SEGMENT = /^[A-Za-z0-9._~-]+$/;
const PARAM_SEGMENT = /^:([A-Za-z_][A-Za-z0-9_]{0,63})$/;

/** `/`, or `/`-separated segments that are literal (`users`) or parameters (`:id`); no empty segment, no trailing slash. */
const endpointPath = z.string().max(500).superRefine((path, ctx) => {
  if (!path.startsWith('/')) return void ctx.addIssue({ code: 'custom', message: 'must start with /' });
  if (path === '/') return;
  const names = new Set<string>();
  for (const segment of path.slice(1).split('/')) {
    const param = PARAM_SEGMENT.exec(segment);
    if (param) {
      if (names.has(param[1]!)) ctx.addIssue({ code: 'custom', message: `parameter :${param[1]} appears twice` });
      names.add(param[1]!);
    } else if (!STATIC_SEGMENT.test(segment)) {
      ctx.addIssue({ code: 'custom', message: `segment '${segment}' must be letters, digits, . _ ~ - or :name (no empty segment or trailing slash)` });
    }
  }
});

export const releaseEndpointSchema = z.object({
  method: z.string().transform((m) => m.toUpperCase()).pipe(z.enum(RELEASE_METHODS)),
  path: endpointPath,
  deploymentId: z.uuid().optional().describe('runs exactly this deployment'),
  documentId: z.uuid().optional().describe('runs the newest deployment of this document'),
  skipAuth: z.boolean().default(false).describe('public even when the release requires auth (never for a private deployment)'),
  fieldMapping: z.record(z.string().min(1).max(200), z.string().min(1).max(200)).default({})
    .describe('public field → workflow input; when given, only mapped fields reach the workflow'),
}).refine((e) => !(e.deploymentId && e.documentId), { message: 'give deploymentId or documentId, not both' });
export type ReleaseEndpoint = z.infer<typeof releaseEndpointSchema>;

export const releaseEndpointsSchema = z.array(releaseEndpointSchema).max(100).superRefine((endpoints, ctx) => {
  const seen = new Map<string, number>();
  endpoints.forEach((e, index) => {
    // `/users/:id` and `/users/:name` would take the same requests: refuse the second.
    const shape = `${e.method} ${e.path.replace(/:[^/]+/g, ':')}`;
    const first = seen.get(shape);
    if (first !== undefined) ctx.addIssue({ code: 'custom', path: [index, 'path'], message: `matches the same requests as endpoint ${first}` });
    else seen.set(shape, index);
  });
});

/** How error messages name an endpoint: `Endpoint 'POST /greet/:name' …`. */
export const endpointLabel = (e: Pick<ReleaseEndpoint, 'method' | 'path'>) => `${e.method} ${e.path}`;

const segmentsOf = (path: string) => (path === '/' ? [] : path.slice(1).split('/'));

function matchPath(pattern: string, requested: string[]): Record<string, string> | null {
  const segments = segmentsOf(pattern);
  if (segments.length !== requested.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const param = PARAM_SEGMENT.exec(segments[i]!);
    if (param) {
      if (requested[i] === '') return null;
      params[param[1]!] = requested[i]!;
    } else if (segments[i] !== requested[i]) {
      return null;
    }
  }
  return params;
}

/** Literal segments beat parameters, left to right: `/users/me` wins over `/users/:id` for `/users/me`. */
const specificity = (path: string) => segmentsOf(path).map((s) => (s.startsWith(':') ? '0' : '1')).join('');

/**
 * The endpoint for `METHOD path` (path as requested, starting with `/`, already percent-decoded),
 * with its path parameters; null when none matches exactly (segment count, literals and method).
 */
export function matchEndpoint<E extends Pick<ReleaseEndpoint, 'method' | 'path'>>(endpoints: readonly E[], method: string, path: string): { endpoint: E; params: Record<string, string> } | null {
  const requested = segmentsOf(path);
  let best: { endpoint: E; params: Record<string, string> } | null = null;
  for (const endpoint of endpoints) {
    if (endpoint.method !== method) continue;
    const params = matchPath(endpoint.path, requested);
    if (params && (!best || specificity(endpoint.path) > specificity(best.endpoint.path))) best = { endpoint, params };
  }
  return best;
}

/**
 * Public fields → workflow inputs (spec §4.1 rule 4, before validation). Without a mapping every
 * field passes as it is; with one, only mapped fields pass, so a release exposes exactly the
 * fields it names and callers cannot set the workflow's other inputs.
 */
export function mapFields(fields: Record<string, unknown>, mapping: Record<string, string>): Record<string, unknown> {
  if (Object.keys(mapping).length === 0) return { ...fields };
  const mapped: Record<string, unknown> = {};
  for (const [publicField, input] of Object.entries(mapping)) {
    if (Object.hasOwn(fields, publicField)) mapped[input] = fields[publicField];
  }
  return mapped;
}

/**
 * Query strings carry only text: for GET calls, a `number` or `boolean` input given as its usual
 * text (`21`, `true`) becomes that value. Anything else is left for validation to report.
 */
export function coerceQueryInputs(schema: { inputs: ApiSchemaField[] }, inputs: Record<string, unknown>): Record<string, unknown> {
  const coerced = { ...inputs };
  for (const field of schema.inputs) {
    const key = Object.hasOwn(coerced, field.name) ? field.name : field.blockId;
    const value = coerced[key];
    if (typeof value !== 'string') continue;
    if (field.valueType === 'number' && value.trim() !== '' && Number.isFinite(Number(value))) coerced[key] = Number(value);
    if (field.valueType === 'boolean' && (value === 'true' || value === 'false')) coerced[key] = value === 'true';
  }
  return coerced;
}
