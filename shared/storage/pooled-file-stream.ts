import { close, read } from 'node:fs';
import { Readable } from 'node:stream';

// A byte range of an open file as a stream of reused buffers (the board download route; measured
// by `npm run bench`, section 6). fs.createReadStream allocates a fresh Buffer per
// read: at a GB/s those backing stores outlive a scavenge while they wait in the socket's queue, and
// V8 answers the external memory with a major GC every ~200 MiB, which in the API's large heap costs
// more than the copying itself. A buffer goes back to the pool once the response no longer holds
// it: the response (with its socket) counts the bytes it has not handed to the kernel yet.

const CHUNK_BYTES = 1024 * 1024;
/** At most this many idle buffers are kept (32 MiB); more are allocated under load and then dropped. */
const MAX_POOLED = 32;
const pool: Buffer[] = [];

/** The response the stream is piped into: an http.ServerResponse (`reply.raw`). */
export interface ByteSink {
  /** Bytes written to it that have not reached the kernel yet (its own and its socket's). */
  readonly writableLength: number;
  once(event: 'finish', listener: () => void): unknown;
}

export class PooledFileStream extends Readable {
  private position: number;
  private pushedBytes = 0;
  /** Buffers handed on, oldest first, with the count of pushed bytes at their end. */
  private readonly handedOn: Array<{ buffer: Buffer; until: number }> = [];

  /** Streams bytes `start`..`end` (inclusive) of `fd`, and closes `fd` when done or destroyed. */
  constructor(private readonly fd: number, start: number, private readonly end: number, private readonly sink: ByteSink) {
    super({ highWaterMark: CHUNK_BYTES });
    this.position = start;
    // 'finish': every byte reached the kernel. A response that fails instead keeps its buffers (the GC takes them).
    sink.once('finish', () => this.recycle(Number.POSITIVE_INFINITY));
  }

  private recycle(doneBytes: number): void {
    while (this.handedOn.length > 0 && this.handedOn[0]!.until <= doneBytes) {
      const { buffer } = this.handedOn.shift()!;
      if (pool.length < MAX_POOLED) pool.push(buffer);
    }
  }

  override _read(): void {
    this.recycle(this.pushedBytes - this.readableLength - this.sink.writableLength);
    const wanted = Math.min(CHUNK_BYTES, this.end - this.position + 1);
    if (wanted <= 0) {
      this.push(null);
      return;
    }
    const buffer = pool.pop() ?? Buffer.allocUnsafeSlow(CHUNK_BYTES);
    read(this.fd, buffer, 0, wanted, this.position, (error, bytesRead) => {
      if (error || bytesRead === 0) {
        if (pool.length < MAX_POOLED) pool.push(buffer);
        this.destroy(error ?? new Error('the file ended before the range did'));
        return;
      }
      this.position += bytesRead;
      this.pushedBytes += bytesRead;
      this.handedOn.push({ buffer, until: this.pushedBytes });
      this.push(bytesRead === CHUNK_BYTES ? buffer : buffer.subarray(0, bytesRead));
    });
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    close(this.fd, (closeError) => callback(error ?? closeError));
  }
}
