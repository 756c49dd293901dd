// Captures the workflow histories that test/replay/replay.test.ts replays against the current
// workflow bundle (docs/decisions.md "Replay tests"). Boots the real stack the way the test harness
// does (embedded PostgreSQL, a headless Temporal dev server, the workflow bundle, the workers of
// worker/ and the API), runs one representative execution per fixture through the API or the
// Temporal client, and writes each history as JSON (`historyToJSON`, read back by `historyFromJSON`
// and by `Worker.runReplayHistories`) to test/replay/histories/<name>.json.
//
//   node --import tsx scripts/capture-workflow-histories.ts                  # every fixture
//   node --import tsx scripts/capture-workflow-histories.ts platform-probe   # only the named ones
//
// Re-capture only after an intentional change to a workflow, guarded by `patched()` so the old
// histories still replay (docs/app-runs.md "Workflow replay fixtures").
import { randomUUID } from 'node:crypto';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { sql } from 'kysely';
import { buildApp } from '../api/app.js';
import { connectAppDeps } from '../api/connect-deps.js';
import { createDocument } from '../shared/documents/service.js';
import { publishDocument } from '../shared/publishing/service.js';
import type { Graph } from '../shared/documents/graph.js';
import { grantCredits } from '../shared/billing/service.js';
import { loadConfig } from '../shared/config.js';
import { createApiKey } from '../shared/credentials/api-keys.js';
import { createDb } from '../shared/db/client.js';
import { startEmbeddedPostgres } from '../shared/db/embedded.js';
import { migrateToLatest } from '../shared/db/migrate.js';
import { createProject, createTeam, createUser } from '../shared/identity/service.js';
import { upsertSiteSetting } from '../shared/site-settings/repository.js';
import { startTemporalDevServer } from '../temporal/dev-server.js';
import { taskQueueName } from '../temporal/task-queues.js';
import { workflowIds } from '../temporal/workflow-ids.js';
import { bundleWorkflows } from '../worker/bundle.js';
import { startChanAServer } from '../test/harness/chan-a-server.js';
import { captureOrderSagas } from './capture/order-sagas.js';
import { captureConnectorPoll, connectorFixtureNames } from './capture/connector-poll.js';
import { findFreePort } from '../shared/ports.js';
import { captureProjectGraph, graphFixtureNames } from './capture/project-graph.js';
import { createWorkers } from '../worker/create-workers.js';

const historiesDir = fileURLToPath(new URL('../test/replay/histories/', import.meta.url));

const say = (line: string) => process.stdout.write(`[capture] ${line}\n`);

// Worker state changes at INFO would drown the output; we stop everything ourselves.
Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });

const pureGraph: Graph = {
  blocks: [
    { id: 'q', type: 'input', name: 'name', config: { valueType: 'string', required: true } },
    { id: 't', type: 'template', name: 'greeting', config: { template: 'hello {{q}}' } },
    { id: 'o', type: 'output', name: 'result', config: { value: '{{t}}' } },
  ],
  edges: [{ from: 'q', to: 't' }, { from: 't', to: 'o' }],
};
const httpGraph = (origin: string, route: string): Graph => ({
  blocks: [
    { id: 'q', type: 'input', name: 'topic', config: { valueType: 'string', required: true } },
    { id: 'call', type: 'http', name: 'call', config: { method: 'GET', url: `${origin}${route}/{{q}}` } },
    { id: 'o', type: 'output', name: 'result', config: { value: '={ "status": $call.status, "path": $call.body.path }' } },
  ],
  edges: [{ from: 'q', to: 'call' }, { from: 'call', to: 'o' }],
});
const failingGraph: Graph = {
  blocks: [
    { id: 'q', type: 'input', name: 'name', config: { valueType: 'string', required: true } },
    { id: 'boom', type: 'transform', name: 'boom', config: { expression: "$error('boom ' & $q)" } },
    { id: 'o', type: 'output', name: 'result', config: { value: '{{boom}}' } },
  ],
  edges: [{ from: 'q', to: 'boom' }, { from: 'boom', to: 'o' }],
};

/**
 * The SDK's `historyToJSON`, done with the protojson of the protobufjs copy @temporalio/proto was built
 * with: in this install npm nests a protobufjs@8 under each @temporalio package, and the SDK's own
 * function then fails with "type must be a Type" (test/replay/history-json.ts, which reads them back).
 */
function historyToJSON(history: History): unknown {
  const requireHere = createRequire(import.meta.url);
  const { toJson } = createRequire(requireHere.resolve('@temporalio/proto'))('protobufjs/ext/protojson') as { toJson(type: unknown, message: unknown): unknown };
  const { patchProtobufRoot } = requireHere('@temporalio/proto/lib/patch-protobuf-root') as { patchProtobufRoot(root: unknown): { lookupType(name: string): { fromObject(o: unknown): unknown } } };
  const historyType = patchProtobufRoot(requireHere('@temporalio/proto')).lookupType('temporal.api.history.v1.History');
  return toJson(historyType, historyType.fromObject(history));
}

/** Histories carry the worker's and client's identity (`pid@hostname`): not something to commit. */
function scrubIdentities(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(scrubIdentities);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, v]) =>
    [key, key === 'identity' && typeof v === 'string' ? 'capture-workflow-histories' : scrubIdentities(v)]));
}

const fixtureNames = [
  'app-run-pure', 'app-run-http', 'app-run-block-failure', 'app-run-timeout', 'scheduled-run-manual', 'app-run-scheduled-child', 'platform-probe',
  'hardware-order-delivered', 'hardware-order-refunded', 'hardware-order-expired',
  ...graphFixtureNames,
  ...connectorFixtureNames,
];
const only = new Set(process.argv.slice(2));
const unknown = [...only].filter((name) => !fixtureNames.includes(name));
if (unknown.length > 0) {
  console.error(`unknown fixture ${unknown.join(', ')}; known: ${fixtureNames.join(', ')}`);
  process.exit(2);
}
const wanted = (name: string) => only.size === 0 || only.has(name);

const cleanups: Array<() => Promise<unknown>> = [];
async function cleanUp(): Promise<void> {
  for (const step of cleanups.reverse()) await step().catch((error: Error) => say(`while stopping: ${error.message}`));
  cleanups.length = 0;
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void cleanUp().finally(() => process.exit(130)));

try {
  const started = performance.now();
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-capture-'));
  // Under root, PostgreSQL runs as the `postgres` user, which must be able to enter this folder.
  await chmod(workDir, 0o755);
  cleanups.push(() => rm(workDir, { recursive: true, force: true }));

  say('starting PostgreSQL and Temporal, bundling workflows…');
  const [postgresStart, temporalStart, bundleStart] = await Promise.allSettled([
    startEmbeddedPostgres({ dataDir: path.join(workDir, 'postgres'), persistent: false }),
    startTemporalDevServer({ namespace: 'default' }),
    bundleWorkflows(),
  ]);
  // Whatever started is stopped again, also when something else failed to.
  if (postgresStart.status === 'fulfilled') cleanups.push(() => postgresStart.value.stop());
  if (temporalStart.status === 'fulfilled') cleanups.push(() => temporalStart.value.stop());
  const settled = <T>(result: PromiseSettledResult<T>): T => { if (result.status === 'rejected') throw result.reason; return result.value; };
  const [postgres, temporal, bundle] = [settled(postgresStart), settled(temporalStart), settled(bundleStart)];
  const admin = createDb(postgres.url, { poolSize: 1 });
  await sql.raw('CREATE DATABASE capture').execute(admin);
  await admin.destroy();
  const databaseUrl = postgres.urlFor('capture');
  const migrator = createDb(databaseUrl, { poolSize: 1 });
  await migrateToLatest(migrator);
  await migrator.destroy();

  // chan_a for the order sagas: the local server of the tests, with its own keys.
  const chanA = await startChanAServer();
  cleanups.push(() => chanA.close());
  // The API listens here: the connector dispatcher of the workers calls it.
  const apiPort = await findFreePort();
  const config = loadConfig({
    NODE_ENV: 'test', LOG_LEVEL: 'silent', DATA_DIR: path.join(workDir, 'data'), DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: temporal.address, ...chanA.env,
    INTERNAL_API_URL: `http://127.0.0.1:${apiPort}`,
  });
  await mkdir(config.DATA_DIR, { recursive: true });
  const deps = await connectAppDeps(config, { databaseUrl, temporalAddress: temporal.address }, say);
  cleanups.push(() => deps.close());
  const { db, temporal: { client } } = deps;

  // The real workers of worker/, on their own connection (as `npm run worker` next to `npm run api`),
  // sharing the API's settings cache as the test harness does, so a site setting applies at once.
  const workerConnection = await NativeConnection.connect({ address: temporal.address });
  cleanups.push(() => workerConnection.close());
  const workers = await createWorkers({
    connection: workerConnection, namespace: config.TEMPORAL_NAMESPACE, deps: { db, settings: deps.settings, config, secrets: deps.secrets },
    workflowBundle: { code: bundle.code },
  });
  const running = workers.run();
  running.catch((error: Error) => say(`worker failed: ${error.message}`));
  cleanups.push(() => workers.shutdown());
  const app = await buildApp(deps, { logger: false });
  cleanups.push(() => app.close());
  await app.listen({ port: apiPort, host: '127.0.0.1' });

  // 127.0.0.1 target of the http blocks: /lookup answers JSON, /slow never answers.
  const target = http.createServer((req, res) => {
    if (req.url?.startsWith('/slow')) return;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ path: req.url, method: req.method }));
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  // Before the workers stop: drops the request the timed-out run left hanging.
  cleanups.push(() => new Promise<void>((resolve) => { target.closeAllConnections(); target.close(() => resolve()); }));
  const origin = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  await upsertSiteSetting(db, 'http_block.allow_hosts', [origin.slice('http://'.length), new URL(chanA.url).host]);
  await upsertSiteSetting(db, 'hardware_sales.refund_window_seconds', 0);
  deps.settings.invalidate();

  const user = await createUser(db, { email: `capture-${randomUUID().slice(0, 8)}@example.com`, name: 'Capture' });
  const team = await createTeam(db, { ownerId: user.id, name: 'Capture', plan: 'pro' });
  await grantCredits(db, { teamId: team.id, amountMilli: 1_000_000 });
  const project = await createProject(db, { teamId: team.id, name: 'Capture', createdBy: user.id });
  const { token: apiKey } = await createApiKey(db, { teamId: team.id, createdBy: user.id, name: 'capture' });
  const jwt = await deps.idp.issue(user.id, 600);
  const operator = { kind: 'operator' } as const;
  const publish = async (name: string, graph: Graph) => {
    const document = await createDocument(db, operator, { projectId: project.id, name, graph });
    return (await publishDocument(db, operator, document.id, {})).id;
  };

  /** Starts a run through the API, as a client would (JSON answer), and waits for its workflow to close. */
  async function runApp(deploymentId: string, body: Record<string, unknown>): Promise<string> {
    const res = await app.inject({
      method: 'POST', url: `/api/released-app/${deploymentId}/run`, headers: { authorization: `Bearer ${apiKey}` }, payload: { stream: false, ...body },
    });
    const runId = res.headers['x-run-id'];
    if (typeof runId !== 'string') throw new Error(`run refused: ${res.statusCode} ${res.body}`);
    const workflowId = workflowIds.appRun(runId);
    await client.workflow.getHandle(workflowId).result();
    return workflowId;
  }

  async function save(name: string, workflowId: string): Promise<void> {
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    const json = JSON.stringify(scrubIdentities(historyToJSON(history)), null, 2);
    await writeFile(path.join(historiesDir, `${name}.json`), `${json}\n`);
    say(`${name}.json: ${history.events?.length ?? 0} events, ${(Buffer.byteLength(json) / 1024).toFixed(1)} KiB`);
  }

  await mkdir(historiesDir, { recursive: true });
  say(`stack ready in ${Math.round(performance.now() - started)} ms`);

  if (wanted('app-run-pure')) {
    await save('app-run-pure', await runApp(await publish('pure', pureGraph), { inputs: { name: 'Ada' } }));
  }
  if (wanted('app-run-http')) {
    await save('app-run-http', await runApp(await publish('http', httpGraph(origin, '/lookup')), { inputs: { topic: 'foxes' } }));
  }
  if (wanted('app-run-block-failure')) {
    await save('app-run-block-failure', await runApp(await publish('failing', failingGraph), { inputs: { name: 'Ada' } }));
  }
  if (wanted('app-run-timeout')) {
    await save('app-run-timeout', await runApp(await publish('slow', httpGraph(origin, '/slow')), { inputs: { topic: 'snails' }, timeout: 1 }));
  }
  if (wanted('scheduled-run-manual') || wanted('app-run-scheduled-child')) {
    const deploymentId = await publish('scheduled', pureGraph);
    const call = (method: 'POST', url: string, payload?: object) => app.inject({ method, url, headers: { authorization: `Bearer ${jwt}` }, ...(payload ? { payload } : {}) });
    // Disabled: no Temporal Schedule fires it; the manual trigger is the execution we record.
    const created = await call('POST', `/projects/${project.id}/schedules`, {
      name: 'capture', deployment_id: deploymentId, cron_expression: '0 0 1 1 *', enabled: false, trigger_config: { inputs: { name: 'schedule' } },
    });
    if (created.statusCode !== 201) throw new Error(`schedule refused: ${created.statusCode} ${created.body}`);
    const scheduleId = (created.json() as { schedule: { id: string } }).schedule.id;
    const triggered = await call('POST', `/projects/${project.id}/schedules/${scheduleId}/trigger`);
    if (triggered.statusCode !== 200) throw new Error(`trigger failed: ${triggered.statusCode} ${triggered.body}`);
    const { runId } = (triggered.json() as { result: { runId: string } }).result;
    // The trigger's workflow id has a random part: the child run names its parent.
    const child = await client.workflow.getHandle(workflowIds.appRun(runId)).describe();
    const parentId = child.parentExecution?.workflowId;
    if (!parentId) throw new Error(`run ${runId} has no parent workflow`);
    if (wanted('scheduled-run-manual')) await save('scheduled-run-manual', parentId);
    if (wanted('app-run-scheduled-child')) await save('app-run-scheduled-child', child.workflowId);
  }
  if (wanted('platform-probe')) {
    const probeId = randomUUID();
    const workflowId = workflowIds.platformProbe(probeId);
    await client.workflow.execute('platformProbeWorkflow', {
      taskQueue: taskQueueName('platform', config.TEMPORAL_TASK_QUEUE_SUFFIX), workflowId, args: [{ probeId, note: 'replay fixture' }],
    });
    await save('platform-probe', workflowId);
  }
  if (fixtureNames.some((name) => name.startsWith('hardware-order-') && wanted(name))) {
    await captureOrderSagas({ db, app, client, chanA, jwt, wanted, save, settings: deps.settings });
  }
  if (graphFixtureNames.some(wanted)) await captureProjectGraph({ db, app, client, jwt, projectId: project.id, settings: deps.settings, wanted, save });
  if (connectorFixtureNames.some(wanted)) {
    await captureConnectorPoll({ db, app, client, jwt, projectId: project.id, settings: deps.settings, taskQueueSuffix: config.TEMPORAL_TASK_QUEUE_SUFFIX, wanted, save });
  }
  await cleanUp();
  say('done');
} catch (error) {
  say(`failed: ${(error as Error).stack ?? error}`);
  await cleanUp();
  process.exitCode = 1;
}
