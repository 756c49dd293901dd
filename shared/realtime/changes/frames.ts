import type { Vsn } from '../serializer.js';

/**
 * A `postgres_changes` push, the bytes `encodeFrame(vsn, joinRef, null, topic, 'postgres_changes',
 * { ids, data })` would make, around `data` already encoded as JSON: a change goes to many
 * channels, and its payload is encoded once, not once per channel.
 */
export function encodeChangeFrame(vsn: Vsn, joinRef: string | null, topic: string, ids: readonly number[], data: string): string {
  const payload = `{"ids":${JSON.stringify(ids)},"data":${data}}`;
  if (vsn === '2.0.0') return `[${JSON.stringify(joinRef)},null,${JSON.stringify(topic)},"postgres_changes",${payload}]`;
  return `{"join_ref":${JSON.stringify(joinRef)},"ref":null,"topic":${JSON.stringify(topic)},"event":"postgres_changes","payload":${payload}}`;
}
