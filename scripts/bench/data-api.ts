import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { sql } from 'kysely';
import { buildApp } from '../../api/app.js';
import type { AppDeps } from '../../api/deps.js';
import { anonKeysOf } from '../../shared/data-api/identity.js';
import { exampleGraph } from '../../shared/documents/example-graph.js';
import { publishDirect } from '../../test/harness/apps.js';
import { createProject, createTeam, createUser } from '../../shared/identity/service.js';
import { concurrentOpsPerSecond, median, report, type Comparison } from './measure.js';
import { withOwnStack } from './own-stack.js';

const REQUESTS = 2_000;
const CONCURRENCY = 16;
const PAIRS = 5;

/**
 * Issue 36: the frontend's data API against the plainest way to serve the same rows. Each pair runs
 * a plain Fastify route with one Kysely query (no authentication, no row-level security) and then
 * the same read through `/rest/v1` as supabase-js sends it (anon key, user JWT verified, role and
 * claims set, the policies of migration 0024 deciding), over loopback HTTP with 16 callers, and
 * keeps each side's median. Targets: a point read ≥ 0.7×, a run with its deployment embedded ≥ 0.5×
 * (PostgREST: about 2,000 point reads/s and 800 embedded ones on 2 vCPUs).
 */
export async function benchDataApi(deps: AppDeps, { requests = REQUESTS, pairs = PAIRS } = {}): Promise<Comparison[]> {
  const owner = await createUser(deps.db, { email: `bench-${randomUUID().slice(0, 8)}@example.com`, name: 'Bench' });
  const team = await createTeam(deps.db, { ownerId: owner.id, name: 'Bench' });
  const project = await createProject(deps.db, { teamId: team.id, name: 'Bench project', createdBy: owner.id });
  // Other teams' rows, so the policies and the indexes have something to skip.
  for (let i = 0; i < 50; i++) {
    const other = await createUser(deps.db, { email: `other-${i}-${randomUUID().slice(0, 8)}@example.com` });
    const otherTeam = await createTeam(deps.db, { ownerId: other.id, name: `Other ${i}` });
    await createProject(deps.db, { teamId: otherTeam.id, name: 'Theirs', createdBy: other.id });
  }
  const { deploymentId, documentId } = await publishDirect(deps.db, exampleGraph, { teamId: team.id, publishedBy: owner.id });
  const runIds: string[] = [];
  for (let i = 0; i < 200; i++) {
    const id = randomUUID();
    runIds.push(id);
    // runs.project_id: the deployment's, filled by the table's trigger (migration 0023).
    await sql`insert into runs (id, deployment_id, document_id, team_id, inputs, trigger_source, status)
      values (${id}, ${deploymentId}, ${documentId}, ${team.id}, '{}', 'api-key', 'completed')`.execute(deps.db);
  }
  const runId = runIds[100]!;

  const jwt = await deps.idp.issue(owner.id, 3600);
  const anonKey = anonKeysOf(deps.secrets).current!;
  const app = await buildApp(deps, { logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const appUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

  const db = deps.db;
  const bare = Fastify({ logger: false });
  bare.get<{ Params: { id: string } }>('/projects/:id', async (request) =>
    db.selectFrom('projects').select(['id', 'team_id', 'name', 'slug', 'created_at']).where('id', '=', request.params.id).execute());
  bare.get<{ Params: { id: string } }>('/runs/:id', async (request) =>
    db.selectFrom('runs').innerJoin('deployments', 'deployments.id', 'runs.deployment_id')
      .select(['runs.id', 'runs.status', 'runs.created_at', 'deployments.id as deployment_id', 'deployments.version_major', 'deployments.version_minor', 'deployments.visibility'])
      .where('runs.id', '=', request.params.id).execute());
  await bare.listen({ port: 0, host: '127.0.0.1' });
  const bareUrl = `http://127.0.0.1:${(bare.server.address() as AddressInfo).port}`;

  const headers = { apikey: anonKey, authorization: `Bearer ${jwt}`, accept: 'application/json', 'accept-profile': 'public', 'x-client-info': 'supabase-js-node/2.109.0' };
  const get = (url: string, init?: RequestInit) => async () => {
    const response = await fetch(url, init);
    const body = await response.json() as unknown[];
    if (response.status !== 200 || body.length !== 1) throw new Error(`data-api bench: ${url} answered ${response.status} with ${JSON.stringify(body).slice(0, 200)}`);
  };
  const cases = [
    {
      name: 'data API point read of one row under RLS (projects by id), 16 concurrent',
      baseline: get(`${bareUrl}/projects/${project.id}`),
      candidate: get(`${appUrl}/rest/v1/projects?select=id,team_id,name,slug,created_at&id=eq.${project.id}`, { headers }),
    },
    {
      name: 'data API embedded select (a run with its deployment) under RLS, 16 concurrent',
      baseline: get(`${bareUrl}/runs/${runId}`),
      candidate: get(`${appUrl}/rest/v1/runs?select=id,status,created_at,deployment:deployments(id,version_major,version_minor,visibility)&id=eq.${runId}`, { headers }),
    },
  ];
  const rows: Comparison[] = [];
  try {
    for (const c of cases) {
      const baseline: number[] = [];
      const candidate: number[] = [];
      for (let pair = 0; pair < pairs; pair++) {
        baseline.push(await concurrentOpsPerSecond(c.baseline, requests, CONCURRENCY, 1));
        candidate.push(await concurrentOpsPerSecond(c.candidate, requests, CONCURRENCY, 1));
      }
      rows.push({ name: c.name, baseline: 'plain Fastify route, one Kysely query, no auth', baselineOps: median(baseline), candidate: '/rest/v1 as supabase-js sends it', candidateOps: median(candidate) });
    }
    return rows;
  } finally {
    await app.close();
    await bare.close();
  }
}

/** `npm run bench -- --only data-api`: this section alone, on a PostgreSQL and Temporal of its own. */
export async function runDataApiBenchAlone(options: { requests?: number; pairs?: number } = {}): Promise<void> {
  await withOwnStack('data-api', async (deps) => {
    report(await benchDataApi(deps, options));
    console.log('\n(one run; the machine is shared, so compare the ratios, not the absolute figures)');
  });
}
