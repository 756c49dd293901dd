import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { buildGoProgram, findOnPath, goProgramDir, type GoProgram } from './go-build-cache.js';
import { TRANSFER_QUEUE_READS_PER_SECOND, transferQueueReadsSetting } from './history-queues.js';
import { searchAttributeDefinitions } from './search-attributes.js';

// The production Temporal server (not the dev server): built from its Go module, on PostgreSQL
// through the `postgres12_pgx` plugin, with its own `temporal` and `temporal_visibility` databases
// whose schemas its SQL tool applies. `npm run topology` runs it; docker-compose.yml runs the image
// of the same version (test/platform/topology-compose.test.ts keeps the two in step).

const execFileAsync = promisify(execFile);

export const TEMPORAL_SERVER_VERSION = '1.32.2';
export const TEMPORAL_UI_SERVER_VERSION = '2.58.1';
export const TEMPORAL_SQL_PLUGIN = 'postgres12_pgx';
export const TEMPORAL_DATABASES = { history: 'temporal', visibility: 'temporal_visibility' } as const;
/** History shards are fixed for a cluster's life: 4 suits one machine; production sizes it once (docs/topology.md). */
export const TEMPORAL_HISTORY_SHARDS = 4;

const serverModule = `go.temporal.io/server@v${TEMPORAL_SERVER_VERSION}`;
export const temporalServerProgram: GoProgram = {
  targets: [`go.temporal.io/server/cmd/server@v${TEMPORAL_SERVER_VERSION}`, `go.temporal.io/server/cmd/tools/sql@v${TEMPORAL_SERVER_VERSION}`],
  binaries: ['server', 'sql'],
  cacheName: `temporal-server-v${TEMPORAL_SERVER_VERSION}`,
};
export const temporalUiProgram: GoProgram = {
  targets: [`github.com/temporalio/ui-server/v2/cmd/server@v${TEMPORAL_UI_SERVER_VERSION}`],
  binaries: ['server'],
  cacheName: `temporal-ui-server-v${TEMPORAL_UI_SERVER_VERSION}`,
  // v2.58.1 pins go.temporal.io/api v1.64.0, which the module proxy here refuses; its patch release is served.
  upgrades: ['go.temporal.io/api@v1.64.3'],
};

export interface TemporalServerBuild { server: string; sqlTool: string; schemaDir: string; uiServer: string }

/**
 * The server, its SQL tool and the UI server, built once (a few minutes each on these machines) and
 * cached like the CLI; the server's PostgreSQL schemas are copied beside them from its module.
 */
export async function ensureTemporalServerBuild(log: (line: string) => void = () => {}): Promise<TemporalServerBuild> {
  const [server, ui] = [await buildGoProgram(temporalServerProgram, log), await buildGoProgram(temporalUiProgram, log)];
  if (!server || !ui) throw new Error(`could not build the Temporal server ${TEMPORAL_SERVER_VERSION} and UI server ${TEMPORAL_UI_SERVER_VERSION} (Go and the module proxy are needed once)`);
  const schemaDir = path.join(goProgramDir(temporalServerProgram), 'schema', 'postgresql', 'v12');
  if (!existsSync(schemaDir)) {
    const go = findOnPath('go');
    if (!go) throw new Error('the Temporal server schemas are missing from the cache and Go is not on PATH');
    const { stdout } = await execFileAsync(go, ['mod', 'download', '-json', serverModule], { env: { ...process.env, GOTOOLCHAIN: 'auto', GOFLAGS: '-mod=mod' } });
    const moduleDir = (JSON.parse(stdout) as { Dir: string }).Dir;
    await cp(path.join(moduleDir, 'schema', 'postgresql', 'v12'), schemaDir, { recursive: true });
  }
  return { server: server.server!, sqlTool: server.sql!, schemaDir, uiServer: ui.server! };
}

export interface PostgresTarget { host: string; port: number; user: string; password: string }

/**
 * Creates the two databases when missing and brings both schemas to the version this server needs
 * (`setup-schema -v 0.0` once, then `update-schema`, which is a no-op when they are current).
 */
export async function setupTemporalSchemas(build: TemporalServerBuild, pg: PostgresTarget, log: (line: string) => void = () => {}): Promise<void> {
  const common = ['--plugin', TEMPORAL_SQL_PLUGIN, '--endpoint', pg.host, '--port', String(pg.port), '--user', pg.user, '--password', pg.password];
  for (const [store, database] of Object.entries({ temporal: TEMPORAL_DATABASES.history, visibility: TEMPORAL_DATABASES.visibility })) {
    const tool = (...args: string[]) => execFileAsync(build.sqlTool, [...common, '--database', database, ...args], { maxBuffer: 8 * 1024 * 1024 });
    const exists = await tool('create-database').then(() => false, (error: Error) => {
      if (/already exists/.test(error.message)) return true;
      throw error;
    });
    if (!exists) await tool('setup-schema', '-v', '0.0');
    await tool('update-schema', '-d', path.join(build.schemaDir, store, 'versioned'));
    log(`Temporal ${store} schema ready in database ${database}`);
  }
}

export interface TemporalServerPorts { frontend: number; frontendHttp: number; history: number; matching: number; worker: number; membership: [number, number, number, number]; metrics: number; pprof: number }

/**
 * The server's configuration: the stock development-postgres12 layout with our ports and database,
 * archival off everywhere (the stock config enables a filestore provider, and the server refuses to
 * start with archival half configured), and its dynamic configuration in `dynamicConfigFile`.
 */
export function temporalServerConfig(options: { pg: PostgresTarget; ports: TemporalServerPorts; dynamicConfigFile: string; maxConns: number }): string {
  const { pg, ports } = options;
  const store = (database: string, maxConns: number) => `
      sql:
        pluginName: "${TEMPORAL_SQL_PLUGIN}"
        databaseName: "${database}"
        connectAddr: "${pg.host}:${pg.port}"
        connectProtocol: "tcp"
        user: ${JSON.stringify(pg.user)}
        password: ${JSON.stringify(pg.password)}
        maxConns: ${maxConns}
        maxIdleConns: ${maxConns}
        maxConnLifetime: "1h"`;
  const service = (name: string, grpc: number, membership: number, http?: number) => `
  ${name}:
    rpc:
      grpcPort: ${grpc}
      membershipPort: ${membership}
      bindOnLocalHost: true${http ? `\n      httpPort: ${http}` : ''}`;
  return `log:
  stdout: true
  level: warn
persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: ${TEMPORAL_HISTORY_SHARDS}
  datastores:
    postgres-default:${store(TEMPORAL_DATABASES.history, options.maxConns)}
    postgres-visibility:${store(TEMPORAL_DATABASES.visibility, 4)}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"
  pprof:
    port: ${ports.pprof}
  metrics:
    prometheus:
      framework: "tally"
      timerType: "histogram"
      listenAddress: "127.0.0.1:${ports.metrics}"
services:${service('frontend', ports.frontend, ports.membership[0], ports.frontendHttp)}${service('history', ports.history, ports.membership[1])}${service('matching', ports.matching, ports.membership[2])}${service('worker', ports.worker, ports.membership[3])}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: "frontend"
      rpcAddress: "127.0.0.1:${ports.frontend}"
dcRedirectionPolicy:
  policy: "noop"
archival:
  history:
    state: "disabled"
  visibility:
    state: "disabled"
namespaceDefaults:
  archival:
    history:
      state: "disabled"
    visibility:
      state: "disabled"
dynamicConfigClient:
  filepath: ${JSON.stringify(options.dynamicConfigFile)}
  pollInterval: "10s"
`;
}

/**
 * Dynamic configuration. Search attributes registered at start are seen by the next start at once
 * (the server otherwise serves them from a cache refreshed every minute). Task-queue partitions stay
 * at the server's default of four: that is what lets several worker processes share a queue
 * (docs/topology.md "Scaling model"). Eager activities, as on the dev server: an activity scheduled
 * by a workflow task comes back in that task's answer instead of through a poll. The transfer
 * queue read as often as the dev server's (history-queues.ts): here every start goes through it, as
 * the APIs have no worker in their process.
 */
export const temporalDynamicConfig = `system.forceSearchAttributesCacheRefreshOnRead:
  - value: true
system.enableActivityEagerExecution:
  - value: true
${transferQueueReadsSetting}:
  - value: ${TRANSFER_QUEUE_READS_PER_SECOND}
`;

/** Writes the config files into `dir`; returns the config file's path. */
export async function writeTemporalServerConfig(dir: string, options: Omit<Parameters<typeof temporalServerConfig>[0], 'dynamicConfigFile'>): Promise<string> {
  await mkdir(dir, { recursive: true });
  const dynamicConfigFile = path.join(dir, 'dynamicconfig.yaml');
  await writeFile(dynamicConfigFile, temporalDynamicConfig);
  const configFile = path.join(dir, 'temporal.yaml');
  await writeFile(configFile, temporalServerConfig({ ...options, dynamicConfigFile }), { mode: 0o600 });
  return configFile;
}

/** The server's command line: its config file, no authorizer (loopback only), all services in one process. */
export const temporalServerArgs = (configFile: string): string[] => ['--config-file', configFile, '--allow-no-auth', 'start'];

/**
 * Registers the namespace (7 days' retention, as the dev server keeps) and the service's search
 * attributes, once the frontend answers; both are no-ops when already there.
 */
export async function registerNamespace(address: string, namespace: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const connection = await Connection.connect({ address });
  try {
    for (;;) {
      try {
        await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('7 days') })
          .catch((error: Error & { code?: number }) => { if (error.code !== 6 /* ALREADY_EXISTS */) throw error; });
        const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
        const missing = searchAttributeDefinitions.filter(({ name }) => !customAttributes?.[name]);
        if (missing.length) {
          await connection.operatorService.addSearchAttributes({
            namespace, searchAttributes: Object.fromEntries(missing.map(({ name, type }) => [name, indexedValueType(type)])),
          });
        }
        await connection.workflowService.describeNamespace({ namespace });
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  } finally {
    await connection.close();
  }
}

/** The API's enum value of a search attribute type (INDEXED_VALUE_TYPE_KEYWORD = 2, …). */
function indexedValueType(type: string): number {
  const values: Record<string, number> = { TEXT: 1, KEYWORD: 2, INT: 3, DOUBLE: 4, BOOL: 5, DATETIME: 6, KEYWORD_LIST: 7 };
  const value = values[type];
  if (value === undefined) throw new Error(`unknown search attribute type ${type}`);
  return value;
}

/** The Web UI server's configuration (ui-server reads `<dir>/<env>.yaml`): the frontend to browse, on loopback. */
export async function writeTemporalUiConfig(dir: string, options: { temporalAddress: string; port: number; namespace: string }): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'topology.yaml'), [
    `temporalGrpcAddress: ${options.temporalAddress}`,
    'host: 127.0.0.1',
    `port: ${options.port}`,
    'enableUi: true',
    `defaultNamespace: ${options.namespace}`,
    'disableNewsFetch: true',
    'notifyOnNewVersion: false',
    'cors:',
    '  cookieInsecure: true',
    '',
  ].join('\n'));
  return ['--root', dir, '--config', '.', '--env', 'topology', 'start'];
}
