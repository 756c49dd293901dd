import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeploymentCache } from '../../shared/documents/deployment-cache.js';
import type { Graph } from '../../shared/documents/graph.js';
import { findRunDeployment } from '../../shared/documents/deployments.js';
import { type DeploymentRow } from '../../shared/documents/deployments-repository.js';
import { grantCredits } from '../../shared/billing/service.js';
import { createProject } from '../../shared/identity/service.js';
import { PgListener } from '../../shared/db/listener.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';

const versionGraph: Graph = { blocks: [{ id: 'o', type: 'output', name: 'out', config: { value: 'v' } }], edges: [] };

describe('the run endpoints read deployments through a cache that NOTIFY keeps honest', () => {
  let stack: TestStack;
  let listener: PgListener;
  let teamId: string;
  let ownerId: string;

  /** A cache on its own listener, and a count of the queries it let through. */
  const observed = () => {
    const cache = new DeploymentCache();
    cache.follow(listener);
    let queries = 0;
    const find = (by: { deploymentId?: string; documentId?: string }, version?: string) =>
      findRunDeployment(stack.db, by, version, { candidates: (key, load) => cache.candidates(key, () => { queries++; return load(); }) } as DeploymentCache);
    return { cache, find, queries: () => queries };
  };

  beforeAll(async () => {
    stack = await createTestStack();
    listener = new PgListener(stack.databaseUrl);
    await listener.start();
    const make = credentialFactory(stack);
    const owner = await make.user('owner');
    ownerId = owner.id;
    teamId = (await make.team(owner.id)).id;
  });
  afterAll(async () => { await listener?.close(); await stack?.close(); });

  it('asks PostgreSQL once per document: by deployment id and by document id alike', async () => {
    const { find, queries } = observed();
    const first = await publishDirect(stack.db, versionGraph, { teamId, version: [1, 0] });
    expect((await find({ deploymentId: first.deploymentId })).id).toBe(first.deploymentId);
    expect((await find({ deploymentId: first.deploymentId })).id).toBe(first.deploymentId);
    expect((await find({ documentId: first.documentId })).id).toBe(first.deploymentId);
    expect(queries()).toBe(1);
  });

  it('a deployment published by another process (an INSERT) is run once its NOTIFY arrives, within 2 s', async () => {
    const { find } = observed();
    const first = await publishDirect(stack.db, versionGraph, { teamId, version: [1, 0] });
    expect((await find({ documentId: first.documentId })).id).toBe(first.deploymentId);
    const newer = await publishDirect(stack.db, versionGraph, { teamId, version: [1, 1], documentId: first.documentId });
    await until(async () => (await find({ documentId: first.documentId })).id === newer.deploymentId, 2_000, 'the newer deployment');
    // The older one stays runnable by id and by exact version.
    expect((await find({ deploymentId: first.deploymentId })).id).toBe(first.deploymentId);
    expect((await find({ documentId: first.documentId }, '1.0')).id).toBe(first.deploymentId);
  });

  it('a deployment deleted by hand in SQL stops running within 2 s, also when a `version` names a sibling', async () => {
    const { find } = observed();
    const first = await publishDirect(stack.db, versionGraph, { teamId, version: [1, 0] });
    const sibling = await publishDirect(stack.db, versionGraph, { teamId, version: [1, 1], documentId: first.documentId });
    expect((await find({ deploymentId: first.deploymentId }, '1.1')).id).toBe(sibling.deploymentId);
    await stack.db.updateTable('deployments').set({ deleted_at: new Date() }).where('id', '=', first.deploymentId).execute();
    const status = (error: unknown) => (error as { status?: number }).status;
    await until(async () => status(await find({ deploymentId: first.deploymentId }).catch((e: unknown) => e)) === 404, 2_000, 'a 404 for the deleted deployment');
    expect(status(await find({ deploymentId: first.deploymentId }, '1.1').catch((e: unknown) => e))).toBe(404);
    expect((await find({ documentId: first.documentId })).id).toBe(sibling.deploymentId);
  });

  it('caches nothing without a live LISTEN connection: a missed NOTIFY cannot pin a stale answer', async () => {
    const deaf = new DeploymentCache(); // never followed
    let queries = 0;
    const load = () => { queries++; return Promise.resolve([{ id: 'a', document_id: 'd' } as DeploymentRow]); };
    await deaf.candidates({ documentId: 'd' }, load);
    await deaf.candidates({ documentId: 'd' }, load);
    expect(queries).toBe(2);

    const own = new PgListener(stack.databaseUrl);
    const cache = new DeploymentCache();
    cache.follow(own);
    await own.start();
    await cache.candidates({ documentId: 'd' }, load);
    await cache.candidates({ documentId: 'd' }, load);
    expect(queries).toBe(3);
    await own.close();
    await cache.candidates({ documentId: 'd' }, load);
    expect(queries).toBe(4);
  });

  it('a load that overlaps an eviction is answered but not kept', async () => {
    const { cache } = observed();
    let queries = 0;
    let release!: () => void;
    const slow = () => { queries++; return new Promise<DeploymentRow[]>((resolve) => { release = () => resolve([{ id: 'a', document_id: 'd' } as DeploymentRow]); }); };
    const pending = cache.candidates({ documentId: 'd' }, slow);
    cache.evict('d');
    release();
    expect(await pending).toHaveLength(1);
    const fast = () => { queries++; return Promise.resolve([{ id: 'a', document_id: 'd' } as DeploymentRow]); };
    await cache.candidates({ documentId: 'd' }, fast);
    await cache.candidates({ documentId: 'd' }, fast);
    expect(queries).toBe(2);
  });

  it('publishing through the editor API is seen by the next run of this process at once', async () => {
    const make = credentialFactory(stack);
    await grantCredits(stack.db, { teamId, amountMilli: 100_000 });
    const apiKey = (await make.apiKey(teamId, ownerId)).token;
    const jwt = await make.jwt(ownerId);
    const projectId = (await createProject(stack.db, { teamId, name: 'Apps' })).id;
    const call = (url: string, token: string, payload: object) =>
      stack.app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${token}` }, payload });
    const documentId = (await call(`/projects/${projectId}/documents`, jwt, { name: 'Versions', graph: versionGraph })).json().document.id as string;
    const published = async () => (await call(`/documents/${documentId}/publish`, jwt, {})).json().deployment.id as string;
    const ranDeployment = async () => {
      const res = await call(`/api/released-app/d/${documentId}/run`, apiKey, { stream: false });
      expect(res.statusCode).toBe(200);
      return (await stack.db.selectFrom('runs').select('deployment_id').where('id', '=', res.json().runId).executeTakeFirstOrThrow()).deployment_id;
    };
    await stack.startWorker();
    for (let i = 0; i < 3; i++) {
      const id = await published();
      expect(await ranDeployment()).toBe(id);
    }
  });
});
