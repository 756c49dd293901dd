import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { composeProxy, renderProxyConfig } from '../../scripts/topology/nginx-config.js';
import { API_PROCESSES, SHARED_ENV_NAMES, WORKER_PROCESSES } from '../../scripts/topology/start.js';
import {
  TEMPORAL_DATABASES, TEMPORAL_HISTORY_SHARDS, TEMPORAL_SERVER_VERSION, TEMPORAL_SQL_PLUGIN, TEMPORAL_UI_SERVER_VERSION, temporalDynamicConfig,
} from '../../temporal/production-server.js';
import { searchAttributeDefinitions, temporalCliTypeName } from '../../temporal/search-attributes.js';
import { WORKER_NODE_FLAGS } from '../../worker/node-flags.js';

interface Service {
  image?: string; build?: unknown; command?: string[]; environment?: Record<string, string>;
  depends_on?: Record<string, unknown> | string[]; deploy?: { replicas?: number }; volumes?: string[]; ports?: string[];
}

// No Docker engine runs on these machines: check that the file parses, wires the services together,
// and is the same layout as `npm run topology` (issue 43): versions, databases, replicas, env, nginx.
describe('docker-compose.yml', () => {
  // merge: compose files use YAML merge keys (`<<: *app-env`), as Docker Compose does.
  const compose = parse(readFileSync('docker-compose.yml', 'utf8'), { merge: true }) as { services: Record<string, Service> };
  const { services } = compose;

  it('has the topology\'s services: PostgreSQL, the Temporal server with its schema job and UI, Redis, APIs, workers, nginx', () => {
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['postgres', 'temporal-schema', 'temporal', 'temporal-ui', 'temporal-namespace', 'redis', 'migrate', 'api', 'worker', 'nginx']));
  });

  it('runs the Temporal server, its SQL tool and the UI at the versions the topology builds', () => {
    expect(services.temporal!.image).toBe(`temporalio/server:${TEMPORAL_SERVER_VERSION}`);
    expect(services['temporal-schema']!.image).toBe(`temporalio/admin-tools:${TEMPORAL_SERVER_VERSION}`);
    expect(services['temporal-namespace']!.image).toBe(`temporalio/admin-tools:${TEMPORAL_SERVER_VERSION}`);
    expect(services['temporal-ui']!.image).toBe(`temporalio/ui:${TEMPORAL_UI_SERVER_VERSION}`);
    expect(services.temporal!.image).not.toMatch(/auto-setup/);
  });

  it('puts Temporal on PostgreSQL as the topology does: plugin, databases, shards, schemas by the SQL tool', () => {
    expect(services.temporal!.environment).toMatchObject({
      DB: TEMPORAL_SQL_PLUGIN, POSTGRES_SEEDS: 'postgres', DBNAME: TEMPORAL_DATABASES.history,
      VISIBILITY_DBNAME: TEMPORAL_DATABASES.visibility, NUM_HISTORY_SHARDS: String(TEMPORAL_HISTORY_SHARDS),
    });
    expect(services['temporal-schema']!.environment!.SQL_PLUGIN).toBe(TEMPORAL_SQL_PLUGIN);
    const script = services['temporal-schema']!.command!.join('\n');
    for (const database of Object.values(TEMPORAL_DATABASES)) expect(script).toContain(`--database ${database} setup-schema -v 0.0`);
    expect(script).toContain('postgresql/v12/temporal/versioned');
    expect(script).toContain('postgresql/v12/visibility/versioned');
    expect(services.temporal!.depends_on).toMatchObject({ 'temporal-schema': { condition: 'service_completed_successfully' } });
  });

  it('registers every search attribute of the service', () => {
    const script = services['temporal-namespace']!.command!.join('\n');
    for (const { name, type } of searchAttributeDefinitions) expect(script).toContain(`--name ${name} --type ${temporalCliTypeName[type]}`);
  });

  it('runs as many API and worker replicas as the topology, with the same environment names', () => {
    expect(services.api!.deploy?.replicas).toBe(API_PROCESSES);
    expect(services.worker!.deploy?.replicas).toBe(WORKER_PROCESSES);
    for (const name of ['api', 'worker']) expect(Object.keys(services[name]!.environment!)).toEqual(expect.arrayContaining([...SHARED_ENV_NAMES]));
    expect(services.api!.environment!.TRUST_PROXY).toBe('uniquelocal');
    expect(services.worker!.environment!.INTERNAL_API_URL).toBe('http://nginx:8080');
    expect(services.api!.ports).toBeUndefined();
  });

  it('runs the worker with the Node flags every worker process gets (worker/node-flags.ts), as `npm run worker` does', () => {
    expect(services.worker!.command).toEqual(['node', ...WORKER_NODE_FLAGS, 'dist/worker/main.js']);
    const scripts = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts.worker).toBe(['node', ...WORKER_NODE_FLAGS, '--import tsx worker/main.ts'].join(' '));
  });

  it.each(['api', 'worker', 'migrate'])('%s is built from the Dockerfile and points at the compose services', (name) => {
    const service = services[name]!;
    expect(service.build).toBe('.');
    expect(service.environment!.DATABASE_URL).toMatch(/^postgres:\/\/[^@]+@postgres:5432\/wfapp$/);
    expect(service.environment!.TEMPORAL_ADDRESS).toBe('temporal:7233');
    const entry = service.command!.at(-1)!;
    expect(existsSync(entry.replace(/^dist\//, '').replace(/\.js$/, '.ts'))).toBe(true);
  });

  it('api and worker wait for migrations, the namespace and Redis', () => {
    for (const name of ['api', 'worker']) {
      expect(services[name]!.depends_on).toMatchObject({
        migrate: { condition: 'service_completed_successfully' },
        'temporal-namespace': { condition: 'service_completed_successfully' },
      });
    }
    expect(services.api!.depends_on).toMatchObject({ redis: { condition: 'service_healthy' } });
    expect(services.api!.environment!.REDIS_URL).toBe('${REDIS_URL:-redis://redis:6379}');
    expect(existsSync('Dockerfile')).toBe(true);
  });

  it("gives the Temporal server the topology's dynamic config (the committed file is temporalDynamicConfig)", () => {
    const temporal = services.temporal!;
    expect(temporal.volumes).toContain('./scripts/topology/temporal-dynamicconfig.yaml:/etc/temporal/config/dynamicconfig/wfapp.yaml:ro');
    expect(temporal.environment!.DYNAMIC_CONFIG_FILE_PATH).toBe('config/dynamicconfig/wfapp.yaml');
    const committed = readFileSync('scripts/topology/temporal-dynamicconfig.yaml', 'utf8').replace(/^#.*\n/, '');
    expect(committed).toBe(temporalDynamicConfig);
    expect(committed).toContain('system.enableActivityEagerExecution');
  });

  it("puts nginx in front with the topology's proxy settings (the committed file is what nginx-config.ts renders)", () => {
    expect(services.nginx!.volumes).toContain('./scripts/topology/nginx-compose.conf:/etc/nginx/conf.d/default.conf:ro');
    expect(services.nginx!.ports).toEqual(['3000:8080']);
    const committed = readFileSync('scripts/topology/nginx-compose.conf', 'utf8').replace(/^#.*\n/, '');
    expect(committed).toBe(renderProxyConfig(composeProxy));
    for (const setting of ['proxy_buffering off;', 'proxy_request_buffering off;', 'proxy_set_header Upgrade $http_upgrade;', 'proxy_read_timeout 3600s;', 'proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;']) {
      expect(committed).toContain(setting);
    }
  });
});
