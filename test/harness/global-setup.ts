import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { createDb } from '../../shared/db/client.js';
import { startEmbeddedPostgres } from '../../shared/db/embedded.js';
import { migrateToLatest } from '../../shared/db/migrate.js';
import { startTemporalDevServer } from '../../temporal/dev-server.js';
import { bundleWorkflows } from '../../worker/bundle.js';
import { ensureTestDependencies } from '../../scripts/ensure-test-dependencies.js';
import { TEMPLATE_DATABASE } from './names.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Connection URL pattern of the test PostgreSQL server, with `{db}` for the database name. */
    postgresUrlPattern: string;
    temporalAddress: string;
    workflowBundlePath: string;
  }
}

/**
 * Once per `npm test`: a real PostgreSQL (embedded) with a migrated template database that each
 * test file clones, a real Temporal dev server (headless, in memory), and the workflow bundle.
 * The three start in parallel; every test file then costs only a CREATE DATABASE … TEMPLATE.
 */
export default async function setup(project: TestProject) {
  // First: chromium and redis-server, installed with apt-get when missing (nothing to do, and silent, when present).
  await ensureTestDependencies();
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-test-'));
  // Under root, PostgreSQL runs as the `postgres` user, which must be able to enter this folder.
  await chmod(workDir, 0o755);
  const started = performance.now();

  const results = await Promise.allSettled([
    startEmbeddedPostgres({ dataDir: path.join(workDir, 'postgres'), persistent: false }),
    process.env.TEST_TEMPORAL_ADDRESS
      ? Promise.resolve({ address: process.env.TEST_TEMPORAL_ADDRESS, uiUrl: null, stop: async () => {} })
      : startTemporalDevServer({ namespace: 'default' }),
    bundleWorkflows(),
  ] as const);
  const failure = results.find((r) => r.status === 'rejected');
  if (failure) {
    // Stop whatever did start, so a failed setup leaves no server behind.
    for (const r of results) if (r.status === 'fulfilled' && 'stop' in r.value) await r.value.stop().catch(() => {});
    await rm(workDir, { recursive: true, force: true });
    throw failure.reason;
  }
  const [postgres, temporal, bundle] = results.map((r) => (r as PromiseFulfilledResult<unknown>).value) as [
    Awaited<ReturnType<typeof startEmbeddedPostgres>>, Awaited<ReturnType<typeof startTemporalDevServer>>, Awaited<ReturnType<typeof bundleWorkflows>>,
  ];

  const admin = createDb(postgres.url, { poolSize: 1 });
  try {
    const { sql } = await import('kysely');
    await sql.raw(`CREATE DATABASE ${TEMPLATE_DATABASE}`).execute(admin);
  } finally {
    await admin.destroy();
  }
  const template = createDb(postgres.urlFor(TEMPLATE_DATABASE), { poolSize: 1 });
  await migrateToLatest(template);
  await template.destroy();

  const workflowBundlePath = path.join(workDir, 'workflow-bundle.js');
  await writeFile(workflowBundlePath, bundle.code);

  project.provide('postgresUrlPattern', postgres.urlFor('{db}'));
  project.provide('temporalAddress', temporal.address);
  project.provide('workflowBundlePath', workflowBundlePath);
  console.log(`[harness] PostgreSQL, Temporal and workflow bundle ready in ${Math.round(performance.now() - started)} ms`);

  return async () => {
    await temporal.stop();
    await postgres.stop();
    await rm(workDir, { recursive: true, force: true });
  };
}
