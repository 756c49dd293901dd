import type { StoredRunEvent } from '../../../shared/app-runs/run-events-repository.js';

// A run stream that waits (docs/long-runs.md): once a run's `block_waiting` has been sent, silence
// is broken every `intervalMs` by a keep-alive (an SSE comment, an empty NDJSON line) so proxies do
// not cut the connection, and after `idleCloseMs` without an event the stream ends without a
// terminal event: the client resumes with GET /api/runs/:runId/events and its last event id.
// Streams of runs that never wait are passed through untouched.

export const KEEP_ALIVE = Symbol('keep-alive');

export async function* withKeepAlive(
  events: AsyncGenerator<StoredRunEvent>, options: { intervalMs: number; idleCloseMs: number; waiting?: boolean },
): AsyncGenerator<StoredRunEvent | typeof KEEP_ALIVE> {
  // A resumed stream of a run that already waits starts with keep-alives.
  let waiting = options.waiting ?? false;
  let lastEventAt = Date.now();
  let next: Promise<IteratorResult<StoredRunEvent>> | null = null;
  try {
    for (;;) {
      next ??= events.next();
      let result: IteratorResult<StoredRunEvent> | typeof KEEP_ALIVE;
      if (!waiting) {
        result = await next;
      } else {
        let timer: NodeJS.Timeout | undefined;
        const tick = new Promise<typeof KEEP_ALIVE>((resolve) => { timer = setTimeout(() => resolve(KEEP_ALIVE), options.intervalMs); });
        try {
          result = await Promise.race([next, tick]);
        } finally {
          clearTimeout(timer);
        }
      }
      if (result === KEEP_ALIVE) {
        if (Date.now() - lastEventAt >= options.idleCloseMs) return;
        yield KEEP_ALIVE;
        continue;
      }
      next = null;
      if (result.done) return;
      lastEventAt = Date.now();
      if (result.value.type === 'block_waiting') waiting = true;
      yield result.value;
    }
  } finally {
    // Ends the reader (its follower leaves the run). Not awaited: a read still pending ends when the
    // response closes (its abort signal), which this stream's end brings about.
    if (next) next.catch(() => undefined);
    events.return(undefined).catch(() => undefined);
  }
}

/** The keep-alive's bytes: an SSE comment, or an empty NDJSON line (clients skip blank lines). */
export const keepAliveFrame = (format: 'ndjson' | 'sse'): string => (format === 'sse' ? ': keep-alive\n\n' : '\n');
