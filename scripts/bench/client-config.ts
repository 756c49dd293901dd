import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { buildApp } from '../../api/app.js';
import type { AppDeps } from '../../api/deps.js';
import { setClientConfig } from '../../shared/public-config/client-config.js';
import { concurrentOpsPerSecond, type Comparison } from './measure.js';

const REQUESTS = 2_000;
const CONCURRENCY = 16;
const PAIRS = 5;

/**
 * Issue 21: a mobile client revalidating its config (GET /public/client-config with a matching
 * If-None-Match, answered 304) against a bare Fastify route sending the same small JSON body, both
 * over loopback HTTP with 16 callers, as section 3 measures /healthz. Target: at least 0.5×.
 * The two are measured in alternation and each side's median kept: on a shared 2-core machine the
 * load moves within seconds, and measuring one side after the other would compare two moments.
 */
export async function benchClientConfig(deps: AppDeps): Promise<Comparison[]> {
  await setClientConfig(deps.db, 'endpoints', { apiBaseUrl: 'https://api.example.com/v1', oauthBaseUrl: 'https://api.example.com/oauth', modelGatewayBaseUrl: 'https://gw.example.com/' });
  await setClientConfig(deps.db, 'models', { modelManifestUrl: 'http://models.example.com/manifest.json', modelBaseUrl: 'https://models.example.com/' });
  await setClientConfig(deps.db, 'flags', { enableLocalAsr: true, enableModelDownload: true, enableTabAiFriends: false });
  // The writes' NOTIFY drops the view; a read now could be one of the old rows.
  deps.settings.invalidate();

  const app = await buildApp(deps, { logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const appUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/public/client-config`;
  const first = await fetch(appUrl);
  const body = await first.text();
  const etag = first.headers.get('etag');
  if (first.status !== 200 || !etag) throw new Error(`client-config bench: expected 200 with an ETag, got ${first.status}`);

  const bare = Fastify({ logger: false });
  bare.get('/public/client-config', (_request, reply) => reply.type('application/json; charset=utf-8').send(body));
  await bare.listen({ port: 0, host: '127.0.0.1' });
  const bareUrl = `http://127.0.0.1:${(bare.server.address() as AddressInfo).port}/public/client-config`;

  const conditional = async () => {
    const response = await fetch(appUrl, { headers: { 'if-none-match': etag } });
    await response.arrayBuffer();
    if (response.status !== 304) throw new Error(`client-config bench: expected 304, got ${response.status}`);
  };
  const plain = () => fetch(bareUrl).then((r) => r.arrayBuffer());
  try {
    const baseline: number[] = [];
    const candidate: number[] = [];
    for (let pair = 0; pair < PAIRS; pair++) {
      baseline.push(await concurrentOpsPerSecond(plain, REQUESTS, CONCURRENCY, 1));
      candidate.push(await concurrentOpsPerSecond(conditional, REQUESTS, CONCURRENCY, 1));
    }
    return [{
      name: 'GET /public/client-config with a matching If-None-Match (304), 16 concurrent',
      baseline: 'bare Fastify route, same JSON body', baselineOps: median(baseline),
      candidate: 'our app, 304', candidateOps: median(candidate),
    }];
  } finally {
    await app.close();
    await bare.close();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
