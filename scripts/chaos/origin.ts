import { sleep } from './timing.js';

/** The service's one origin and a key for it (nginx in the topology, the API under `npm start`). */
export interface OriginTarget { apiUrl: string; apiKey: string }

/**
 * The same JSON call through the origin until it answers 2xx (an API, PostgreSQL or Temporal may be
 * restarting under the kills); its body, or an error naming the last answer after `deadlineMs`.
 */
export async function callThroughOrigin(target: OriginTarget, method: string, path: string, body: unknown, deadlineMs = 60_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + deadlineMs;
  let last = '';
  while (Date.now() < deadline) {
    const res = await fetch(`${target.apiUrl}${path}`, {
      method, headers: { authorization: `Bearer ${target.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    }).catch((error: Error) => error);
    if (!(res instanceof Error) && res.ok) return await res.json() as Record<string, unknown>;
    last = res instanceof Error ? res.message : `${res.status} ${await res.text()}`;
    await sleep(500);
  }
  throw new Error(`${method} ${path}: ${last}`);
}
