import type { SupabaseClient } from '@supabase/supabase-js';
import { anonKeyOf, supabaseFor } from '../realtime/clients.js';
import { credentialFactory } from './credentials.js';
import { createTestStack, type TestStack } from './stack.js';

/** A listening API for realtime tests, with the supabase-js clients a test made (removed by `removeClients`). */
export interface RealtimeTestStack {
  stack: TestStack;
  make: ReturnType<typeof credentialFactory>;
  origin: string;
  anonKey: string;
  /** supabase-js as a signed-in user (a JWT, or a getter for one) or as anon (null); `setAuth` done, so the first join carries the token. */
  client(jwt: string | null | (() => string | null), realtime?: Record<string, unknown>): Promise<SupabaseClient>;
  /** Tracks a client made otherwise, so `removeClients` cleans it up too. */
  track(...clients: SupabaseClient[]): void;
  /** Leaves every channel of the clients made so far (afterEach). */
  removeClients(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The setup the realtime tests share: a test stack listening on a free port, its anon key, a
 * credential factory, and supabase-js clients made the way the contract shows.
 */
export async function startRealtimeTestStack(overrides: NodeJS.ProcessEnv = {}, options: Parameters<typeof createTestStack>[1] = {}): Promise<RealtimeTestStack> {
  const stack = await createTestStack(overrides, options);
  const make = credentialFactory(stack);
  const origin = await stack.app.listen({ port: 0, host: '127.0.0.1' });
  const anonKey = anonKeyOf(stack);
  const clients: SupabaseClient[] = [];
  return {
    stack, make, origin, anonKey,
    async client(jwt, realtime = {}) {
      const token = typeof jwt === 'function' ? jwt : () => jwt;
      const client = supabaseFor(origin, anonKey, token, realtime);
      await client.realtime.setAuth();
      clients.push(client);
      return client;
    },
    track: (...more) => { clients.push(...more); },
    async removeClients() {
      for (const client of clients.splice(0)) await client.removeAllChannels();
    },
    async close() {
      for (const client of clients.splice(0)) await client.removeAllChannels().catch(() => {});
      await stack.close();
    },
  };
}
