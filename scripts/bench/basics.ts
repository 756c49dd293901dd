// Sections 1–3 of `npm run bench`: what every request pays (site settings, credential checks, the
// API's per-request overhead), each against its baseline in the same run.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../../api/app.js';
import type { AppDeps } from '../../api/deps.js';
import { findLiveApiKeyByHash } from '../../shared/credentials/repository.js';
import { generateToken, hasValidTokenShape } from '../../shared/credentials/tokens.js';
import { sha256Hex } from '../../shared/crypto.js';
import { findSiteSetting } from '../../shared/site-settings/repository.js';
import { concurrentOpsPerSecond, opsPerSecond, type Comparison } from './measure.js';

export async function benchRequestBasics(deps: AppDeps): Promise<Comparison[]> {
  const rows: Comparison[] = [];
  // 1. Site settings: every run reads `run.input_limit`; the cache must make that free.
  rows.push({
    name: 'site setting read (run.input_limit)',
    baseline: 'SELECT per read', baselineOps: await opsPerSecond(() => findSiteSetting(deps.db, 'run.input_limit'), 500),
    candidate: 'cache + NOTIFY', candidateOps: await opsPerSecond(() => deps.settings.get('run.input_limit'), 20_000),
  });

  // 2. Garbage credentials: the checksum turns them away before the database is asked.
  const forged = `${generateToken('apiKey').slice(0, -6)}AAAAAA`;
  rows.push({
    name: 'reject a forged API key',
    baseline: 'hash lookup in PostgreSQL', baselineOps: await opsPerSecond(() => findLiveApiKeyByHash(deps.db, sha256Hex(forged)), 500),
    candidate: 'checksum check', candidateOps: await opsPerSecond(() => hasValidTokenShape('apiKey', forged), 100_000),
  });

  // 3. The API's per-request overhead (request ids, metrics, error handling, schemas) over loopback HTTP.
  const bare = http.createServer((_req, res) => { res.setHeader('content-type', 'application/json'); res.end('{"status":"ok"}'); });
  await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
  const app = await buildApp(deps, { logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}/healthz`;
  const appUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/healthz`;
  const get = (url: string) => () => fetch(url).then((r) => r.arrayBuffer());
  rows.push({
    name: 'GET /healthz over HTTP, 16 concurrent',
    baseline: 'bare node:http', baselineOps: await concurrentOpsPerSecond(get(bareUrl), 4_000, 16),
    candidate: 'our Fastify app', candidateOps: await concurrentOpsPerSecond(get(appUrl), 4_000, 16),
  });
  await app.close();
  bare.close();

  return rows;
}
