/** One SSE frame of a run stream: `id:` is the event id a client resumes after (Last-Event-ID). */
export interface SseEvent { id: number; type: string; data: Record<string, unknown> }

/** Reads SSE frames until `stop` says so or the stream ends. */
export async function readSse(body: ReadableStream<Uint8Array>, stop: (events: SseEvent[]) => boolean = () => false): Promise<SseEvent[]> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const events: SseEvent[] = [];
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const field = (name: string) => frame.split('\n').find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2);
      const id = field('id');
      if (id === undefined) continue;
      events.push({ id: Number(id), type: field('event')!, data: JSON.parse(field('data') ?? '{}') });
    }
    if (stop(events)) break;
  }
  await reader.cancel().catch(() => {});
  return events;
}
