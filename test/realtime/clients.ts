import { createClient, type RealtimeChannel, type SupabaseClient } from '@supabase/supabase-js';
import WebSocket from 'ws';
import { anonKeysOf } from '../../shared/data-api/identity.js';
import type { SecretKeyRing } from '../../shared/secrets/key-ring.js';
import { until } from '../harness/until.js';

/**
 * The anon key of a test stack (derived from its SECRETS_KEY, as `cli data-api keys` prints it).
 * Typed by what it reads, not by the harness: scripts (the chaos run) import this file too.
 */
export const anonKeyOf = (stack: { deps: { secrets: SecretKeyRing } }): string => anonKeysOf(stack.deps.secrets).current!;

/**
 * The unmodified supabase-js against a listening API, as the contract shows it (CONTRACTS
 * "Frontend data access"): the anon key, the user's JWT from `accessToken`, ws as transport.
 */
export function supabaseFor(origin: string, anonKey: string, jwt: () => string | null, realtime: Record<string, unknown> = {}): SupabaseClient {
  return createClient(origin, anonKey, {
    accessToken: async () => jwt() ?? anonKey,
    realtime: { transport: WebSocket as never, ...realtime },
  });
}

/** Subscribes and resolves with the first terminal status and its error (SUBSCRIBED, CHANNEL_ERROR, TIMED_OUT, CLOSED). */
export function subscribed(channel: RealtimeChannel): Promise<{ status: string; error?: Error }> {
  return new Promise((resolve) => {
    let done = false;
    channel.subscribe((status, error) => {
      if (done) return;
      done = true;
      resolve({ status, error });
    });
  });
}

/** Every status a channel's subscribe callback reported, in order. */
export function statuses(channel: RealtimeChannel): { list: Array<{ status: string; error?: Error }>; ready: Promise<void> } {
  const list: Array<{ status: string; error?: Error }> = [];
  const ready = new Promise<void>((resolve) => {
    channel.subscribe((status, error) => {
      list.push({ status, error });
      if (status === 'SUBSCRIBED') resolve();
    });
  });
  return { list, ready };
}

export const waitFor = <T>(probe: () => T | undefined | null | false, what: string, timeoutMs = 5_000) =>
  until(async () => probe(), timeoutMs, what, 20);

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A raw Phoenix vsn 2.0.0 (or 1.0.0) socket for the frames supabase-js never sends. */
export class RawSocket {
  readonly ws: WebSocket;
  readonly received: Array<{ data: unknown; binary: boolean }> = [];
  closed: { code: number; reason: string } | null = null;
  private ref = 0;
  readonly opened: Promise<void>;

  constructor(url: string, readonly vsn: '1.0.0' | '2.0.0' = '2.0.0') {
    this.ws = new WebSocket(url);
    this.ws.binaryType = 'nodebuffer';
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => { body += chunk.toString('utf8'); });
        res.on('end', () => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode, body })));
      });
      this.ws.once('error', reject);
    });
    this.ws.on('message', (data: Buffer, binary: boolean) => {
      this.received.push({ data: binary ? data : JSON.parse(data.toString('utf8')), binary });
    });
    this.ws.on('close', (code, reason) => { this.closed = { code, reason: reason.toString() }; });
  }

  /** Sends a frame in this socket's vsn; returns its ref. */
  push(topic: string, event: string, payload: unknown, joinRef: string | null = null): string {
    const ref = String(++this.ref);
    this.ws.send(this.vsn === '2.0.0' ? JSON.stringify([joinRef, ref, topic, event, payload]) : JSON.stringify({ join_ref: joinRef, ref, topic, event, payload }));
    return ref;
  }

  join(topic: string, payload: Record<string, unknown>): string {
    const ref = String(++this.ref);
    this.ws.send(this.vsn === '2.0.0' ? JSON.stringify([ref, ref, topic, 'phx_join', payload]) : JSON.stringify({ join_ref: ref, ref, topic, event: 'phx_join', payload }));
    return ref;
  }

  /** The decoded text frames as objects `{ join_ref, ref, topic, event, payload }`. */
  frames(): Array<{ join_ref: string | null; ref: string | null; topic: string; event: string; payload: Record<string, unknown> }> {
    return this.received.filter((m) => !m.binary).map(({ data }) => {
      if (Array.isArray(data)) { const [join_ref, ref, topic, event, payload] = data; return { join_ref, ref, topic, event, payload }; }
      return data as never;
    });
  }

  reply(ref: string) {
    return this.frames().find((f) => f.event === 'phx_reply' && f.ref === ref);
  }

  async replyTo(ref: string) {
    return waitFor(() => this.reply(ref), `reply to ${ref}`);
  }

  close(): void {
    this.ws.terminate();
  }
}

export function socketUrl(origin: string, params: Record<string, string>): string {
  const url = new URL('/realtime/v1/websocket', origin.replace(/^http/, 'ws'));
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.toString();
}

/** A client broadcast push as supabase-js's serializer writes it (binary kind 3). */
export function binaryBroadcastPush(joinRef: string, ref: string, topic: string, event: string, payload: Buffer, encoding: 'json' | 'binary' = 'json'): Buffer {
  const strings = [joinRef, ref, topic, event, ''].map((s) => Buffer.from(s, 'latin1'));
  return Buffer.concat([Buffer.from([3, ...strings.map((s) => s.length), encoding === 'json' ? 1 : 0]), ...strings, payload]);
}

/** Decodes a server broadcast (binary kind 4). */
export function decodeUserBroadcast(data: Buffer): { topic: string; event: string; encoding: number; payload: Buffer } {
  const [kind, topicLen, eventLen, metaLen, encoding] = [data[0]!, data[1]!, data[2]!, data[3]!, data[4]!];
  if (kind !== 4) throw new Error(`kind ${kind}`);
  let offset = 5;
  const topic = data.toString('utf8', offset, (offset += topicLen));
  const event = data.toString('utf8', offset, (offset += eventLen));
  offset += metaLen;
  return { topic, event, encoding, payload: data.subarray(offset) };
}

/** A join payload as supabase-js 2.109 sends it. */
export function joinPayload(options: { token?: string; presence?: boolean; key?: string; self?: boolean; ack?: boolean; postgresChanges?: unknown[] } = {}) {
  return {
    config: { broadcast: { ack: options.ack ?? false, self: options.self ?? false }, presence: { key: options.key ?? '', enabled: options.presence ?? false }, postgres_changes: options.postgresChanges ?? [], private: false },
    ...(options.token ? { access_token: options.token } : {}),
  };
}
