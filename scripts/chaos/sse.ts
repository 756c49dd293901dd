// Reads a run's SSE stream frame by frame. SSE (not NDJSON) because each frame carries the event id
// (`id: <eventId>`): that is what a client resumes after (Last-Event-ID), and what lets us check
// afterwards that the ids received across resumes are exactly the run's events, in order.

export interface Frame { id: number; type: string }

/** How a read ended: the run's terminal event, the server closing early, a broken connection, or silence. */
export type ReadEnd = 'terminal' | 'closed' | 'broken' | 'idle';

export const TERMINAL_TYPES = new Set(['run_complete', 'run_error']);

export interface ReadResult { end: ReadEnd; error?: string; malformed: number }

/**
 * Calls `onFrame` for each frame with an id, stopping after a terminal event. A read that sees
 * nothing for `idleMs` is given up (`idle`): a stream that silently stopped being fed would
 * otherwise hold a driver forever; the caller resumes it like a broken one.
 */
export async function readFrames(body: ReadableStream<Uint8Array>, onFrame: (frame: Frame) => void, idleMs: number): Promise<ReadResult> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let malformed = 0;
  const finish = async (end: ReadEnd, error?: string): Promise<ReadResult> => {
    await reader.cancel().catch(() => {});
    return { end, error, malformed };
  };
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    let chunk: Awaited<ReturnType<typeof reader.read>> | 'idle';
    try {
      chunk = await Promise.race([
        reader.read(),
        new Promise<'idle'>((resolve) => { timer = setTimeout(() => resolve('idle'), idleMs); }),
      ]);
    } catch (error) {
      return finish('broken', (error as Error).message);
    } finally {
      clearTimeout(timer);
    }
    if (chunk === 'idle') return finish('idle');
    if (chunk.done) return finish('closed');
    buffer += decoder.decode(chunk.value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const lines = buffer.slice(0, end).split('\n');
      buffer = buffer.slice(end + 2);
      const field = (name: string) => lines.find((line) => line.startsWith(`${name}:`))?.slice(name.length + 1).trim();
      const id = field('id');
      if (id === undefined) continue; // a comment or keep-alive frame
      const type = field('event') ?? 'message';
      const data = field('data');
      try {
        JSON.parse(data ?? '');
      } catch {
        malformed += 1;
      }
      if (!/^\d+$/.test(id)) { malformed += 1; continue; }
      onFrame({ id: Number(id), type });
      if (TERMINAL_TYPES.has(type)) return finish('terminal');
    }
  }
}
