// Limits of one realtime socket (docs/realtime.md "Limits"). A client that breaks one gets a
// `system` message naming it; the socket-level ones also close the socket.

export interface RealtimeLimits {
  /** Largest websocket message; a bigger one closes the socket with 1009 (ws's maxPayload). */
  maxFrameBytes: number;
  /** Largest user payload of one broadcast (JSON text or bytes). */
  maxBroadcastBytes: number;
  /** Largest presence `track` payload (JSON text). */
  maxPresenceBytes: number;
  /** Channels joined at once on one socket. */
  maxChannelsPerSocket: number;
  /** Broadcasts one socket may send per second (a bucket of this size refilled at this rate). */
  broadcastsPerSecond: number;
  /** Frames of any kind one socket may send per second before it is closed. */
  framesPerSecond: number;
  /** Bytes queued for a client that does not read; above it the socket is closed. */
  maxBufferedBytes: number;
  /** A socket that sends nothing (not even a heartbeat, every 25 s by default) for this long is closed. */
  idleTimeoutMs: number;
  /** Longest topic name in bytes (binary frames carry it behind a one-byte length). */
  maxTopicBytes: number;
}

export const DEFAULT_LIMITS: RealtimeLimits = {
  maxFrameBytes: 1024 * 1024,
  maxBroadcastBytes: 256 * 1024,
  maxPresenceBytes: 16 * 1024,
  maxChannelsPerSocket: 100,
  broadcastsPerSecond: 100,
  framesPerSecond: 500,
  maxBufferedBytes: 4 * 1024 * 1024,
  idleTimeoutMs: 60_000,
  maxTopicBytes: 255,
};

/** A token bucket: `take()` is false once `perSecond` were taken within about a second. */
export class RateBucket {
  private tokens: number;
  private last = Date.now();
  constructor(private readonly perSecond: number) {
    this.tokens = perSecond;
  }

  take(): boolean {
    const now = Date.now();
    this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.last) / 1000) * this.perSecond);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
