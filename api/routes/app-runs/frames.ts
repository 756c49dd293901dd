import type { StoredRunEvent } from '../../../shared/app-runs/event-log.js';

/** One NDJSON line or SSE frame per stored event; the SSE `id:` lets a client resume with Last-Event-ID. */
export function eventFrame(event: StoredRunEvent, format: 'ndjson' | 'sse'): string {
  const data = JSON.stringify({ type: event.type, ...event.payload });
  return format === 'sse' ? `id: ${event.id}\nevent: ${event.type}\ndata: ${data}\n\n` : `${data}\n`;
}
