import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// No Docker engine runs on these machines: check the file parses and wires the services together.
describe('docker-compose.yml', () => {
  // merge: compose files use YAML merge keys (`<<: *app-env`), as Docker Compose does.
  const compose = parse(readFileSync('docker-compose.yml', 'utf8'), { merge: true }) as {
    services: Record<string, { image?: string; build?: unknown; command?: string[]; environment?: Record<string, string>; depends_on?: Record<string, unknown> | string[] }>;
  };
  const { services } = compose;

  it('has PostgreSQL, Temporal on PostgreSQL, the Temporal UI, the API and the worker', () => {
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['postgres', 'temporal', 'temporal-ui', 'api', 'worker']));
    expect(services.temporal!.environment).toMatchObject({ DB: 'postgres12', POSTGRES_SEEDS: 'postgres' });
    expect(services['temporal-ui']!.environment!.TEMPORAL_ADDRESS).toBe('temporal:7233');
  });

  it.each(['api', 'worker', 'migrate'])('%s is built from the Dockerfile and points at the compose services', (name) => {
    const service = services[name]!;
    expect(service.build).toBe('.');
    expect(service.environment!.DATABASE_URL).toMatch(/^postgres:\/\/[^@]+@postgres:5432\/wfapp$/);
    expect(service.environment!.TEMPORAL_ADDRESS).toBe('temporal:7233');
    const entry = service.command!.at(-1)!;
    expect(existsSync(entry.replace(/^dist\//, '').replace(/\.js$/, '.ts'))).toBe(true);
  });

  it('the API shares rate-limit state through the Redis service', () => {
    expect(services.redis!.image).toMatch(/^redis:/);
    expect(services.api!.environment!.REDIS_URL).toBe('${REDIS_URL:-redis://redis:6379}');
    expect(services.api!.depends_on).toMatchObject({ redis: { condition: 'service_healthy' } });
  });

  it('api and worker wait for migrations and a healthy Temporal', () => {
    for (const name of ['api', 'worker']) {
      expect(services[name]!.depends_on).toMatchObject({
        migrate: { condition: 'service_completed_successfully' },
        temporal: { condition: 'service_healthy' },
      });
    }
    expect(existsSync('Dockerfile')).toBe(true);
  });
});
