// The Phoenix channel wire of the data platform's realtime (docs/realtime.md "Protocol"): vsn 1.0.0
// sends JSON objects, vsn 2.0.0 JSON arrays `[join_ref, ref, topic, event, payload]` plus binary
// broadcast frames. The binary layouts are the ones `@supabase/realtime-js` lib/serializer.ts reads
// and writes: kind 3 (client → server user broadcast push) and kind 4 (server → client user
// broadcast).

export type Vsn = '1.0.0' | '2.0.0';
export const SUPPORTED_VSN: readonly Vsn[] = ['1.0.0', '2.0.0'];

/** One decoded frame. `payload` is the parsed JSON payload; binary broadcasts arrive as `broadcast`. */
export interface Frame {
  joinRef: string | null;
  ref: string | null;
  topic: string;
  event: string;
  payload: unknown;
  /** Set for a kind-3 push: the user payload as sent (JSON text bytes or raw bytes), not re-encoded. */
  broadcast?: { event: string; encoding: 'json' | 'binary'; bytes: Buffer };
}

export class FrameError extends Error {}

const KIND_USER_BROADCAST_PUSH = 3;
const KIND_USER_BROADCAST = 4;
const ENCODING_BINARY = 0;
const ENCODING_JSON = 1;

const refOf = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));

function fromParts(joinRef: unknown, ref: unknown, topic: unknown, event: unknown, payload: unknown): Frame {
  if (typeof topic !== 'string' || typeof event !== 'string') throw new FrameError('A frame needs a string topic and event');
  if (payload === null || typeof payload !== 'object') throw new FrameError('A frame payload must be a JSON object');
  return { joinRef: refOf(joinRef), ref: refOf(ref), topic, event, payload };
}

/** Decodes one text or binary websocket message; throws FrameError for anything malformed. */
export function decodeFrame(data: Buffer, isBinary: boolean, vsn: Vsn): Frame {
  if (isBinary) {
    if (vsn !== '2.0.0') throw new FrameError('Binary frames need vsn 2.0.0');
    return decodeBinaryPush(data);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(data.toString('utf8'));
  } catch {
    throw new FrameError('A frame must be valid JSON');
  }
  if (vsn === '2.0.0') {
    if (!Array.isArray(parsed) || parsed.length !== 5) throw new FrameError('A vsn 2.0.0 frame is a JSON array [join_ref, ref, topic, event, payload]');
    return fromParts(parsed[0], parsed[1], parsed[2], parsed[3], parsed[4]);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new FrameError('A vsn 1.0.0 frame is a JSON object');
  const o = parsed as Record<string, unknown>;
  return fromParts(o.join_ref, o.ref, o.topic, o.event, o.payload);
}

/** Kind 3: kind, joinRef len, ref len, topic len, event len, metadata len, encoding, then the strings and the payload. */
function decodeBinaryPush(data: Buffer): Frame {
  if (data.length < 7 || data[0] !== KIND_USER_BROADCAST_PUSH) throw new FrameError('Unknown binary frame kind');
  const [joinRefLen, refLen, topicLen, eventLen, metaLen, encoding] = [data[1]!, data[2]!, data[3]!, data[4]!, data[5]!, data[6]!];
  let offset = 7;
  const take = (length: number) => {
    if (offset + length > data.length) throw new FrameError('Truncated binary frame');
    const text = data.toString('latin1', offset, offset + length);
    offset += length;
    return text;
  };
  const joinRef = take(joinRefLen);
  const ref = take(refLen);
  const topic = take(topicLen);
  const event = take(eventLen);
  take(metaLen); // metadata (allowedMetadataKeys) is not used by this server
  if (encoding !== ENCODING_JSON && encoding !== ENCODING_BINARY) throw new FrameError('Unknown binary payload encoding');
  const bytes = data.subarray(offset);
  if (encoding === ENCODING_JSON) {
    try {
      JSON.parse(bytes.toString('utf8'));
    } catch {
      throw new FrameError('A broadcast payload must be valid JSON');
    }
  }
  return {
    joinRef: joinRef || null,
    ref: ref || null,
    topic,
    event: 'broadcast',
    payload: { type: 'broadcast', event },
    broadcast: { event, encoding: encoding === ENCODING_JSON ? 'json' : 'binary', bytes },
  };
}

/** A frame as text in the socket's vsn. */
export function encodeFrame(vsn: Vsn, joinRef: string | null, ref: string | null, topic: string, event: string, payload: unknown): string {
  if (vsn === '2.0.0') return JSON.stringify([joinRef, ref, topic, event, payload]);
  return JSON.stringify({ join_ref: joinRef, ref, topic, event, payload });
}

/** A user broadcast, encoded once per vsn and sent as is to every subscriber of the topic. */
export interface BroadcastMessage {
  topic: string;
  event: string;
  encoding: 'json' | 'binary';
  /** JSON text bytes of the user payload, or its raw bytes. */
  bytes: Buffer;
}

/**
 * Encodings of one broadcast, computed at most once per vsn whatever the number of subscribers.
 * vsn 2.0.0 gets the binary kind-4 frame (a JSON array when the topic or event is too long for its
 * one-byte lengths); vsn 1.0.0 gets a JSON object, and nothing for a binary payload (it cannot
 * carry bytes, as on the real server).
 */
export class EncodedBroadcast {
  private v1: string | null | undefined;
  private v2: Buffer | string | undefined;
  constructor(readonly message: BroadcastMessage) {}

  forVsn(vsn: Vsn): Buffer | string | null {
    if (vsn === '2.0.0') return (this.v2 ??= encodeUserBroadcast(this.message));
    if (this.v1 === undefined) this.v1 = this.message.encoding === 'json' ? jsonBroadcast('1.0.0', this.message) : null;
    return this.v1;
  }
}

function jsonBroadcast(vsn: Vsn, m: BroadcastMessage): string {
  const payload = `{"type":"broadcast","event":${JSON.stringify(m.event)},"payload":${m.bytes.toString('utf8')}}`;
  if (vsn === '2.0.0') return `[null,null,${JSON.stringify(m.topic)},"broadcast",${payload}]`;
  return `{"join_ref":null,"ref":null,"topic":${JSON.stringify(m.topic)},"event":"broadcast","payload":${payload}}`;
}

/** Kind 4: kind, topic len, event len, metadata len, encoding, topic, event, metadata, payload. */
function encodeUserBroadcast(m: BroadcastMessage): Buffer | string {
  const topic = Buffer.from(m.topic, 'utf8');
  const event = Buffer.from(m.event, 'utf8');
  // Topics are at most 255 bytes (checked at join) and binary payloads only come in kind-3 frames,
  // whose event fits a byte: only a JSON broadcast from a JSON frame can need the array form.
  if (topic.length > 255 || event.length > 255) return jsonBroadcast('2.0.0', m);
  const header = Buffer.from([KIND_USER_BROADCAST, topic.length, event.length, 0, m.encoding === 'json' ? ENCODING_JSON : ENCODING_BINARY]);
  return Buffer.concat([header, topic, event, m.bytes]);
}
