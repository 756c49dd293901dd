import type { AddressInfo } from 'node:net';
import { startFakeLlm, type FakeLlm } from '../app-runs/llm-server.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

/**
 * What a fault test kills things under: a stack on the given servers with a worker and its keepers
 * (dispatcher, reconciler), listening on loopback, a funded team and an app whose one `llm` block
 * streams from a local model server for about 1.5 s per `repeat` (in flight when a server dies).
 */
export async function startLlmAppStack(options: { env?: NodeJS.ProcessEnv; temporalAddress?: string; databaseUrl?: string; repeat: number }) {
  const llm: FakeLlm = await startFakeLlm({ text: 'a steady stream of words for the run to wait on. '.repeat(options.repeat), chunkSize: 5, delayMs: 50 });
  const stack: TestStack = await createTestStack({ LLM_BASE_URL: llm.url, ...options.env }, options);
  await stack.startWorker({ keepers: true });
  const tenant = await credentialFactory(stack).fundedTenant();
  const { deploymentId } = await publishDirect(stack.db, {
    blocks: [
      { id: 'ask', type: 'llm', name: 'ask', config: { model: 'm', prompt: 'go' } },
      { id: 'o', type: 'output', name: 'o', config: { value: '{{ask.text}}' } },
    ],
    edges: [{ from: 'ask', to: 'o' }],
  }, { teamId: tenant.team.id });
  await stack.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(stack.app.server.address() as AddressInfo).port}`;
  const auth = { authorization: `Bearer ${tenant.apiKey}` };
  return {
    stack, llm, base, auth, tenant, deploymentId,
    /** The app's run endpoint, with the given body fields. */
    run: (body: Record<string, unknown>, signal?: AbortSignal) => fetch(`${base}/api/released-app/${deploymentId}/run`, {
      method: 'POST', signal, headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ inputs: {}, ...body }),
    }),
    async close() {
      await stack.close();
      await llm.close();
    },
  };
}

export type LlmAppStack = Awaited<ReturnType<typeof startLlmAppStack>>;
