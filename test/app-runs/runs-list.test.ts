import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../../shared/identity/service.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

const graph = { blocks: [{ id: 'o', type: 'output', name: 'out', config: { value: 'x' } }], edges: [] };

describe('GET /runs and GET /runs/:runId (signed-in users)', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let alice: string; // owner of teamA, member of teamB
  let bob: string; // owner of teamC only
  let aliceJwt: string;
  let bobJwt: string;
  let teamA: string;
  let teamB: string;
  let teamC: string;
  let aliceKey: string;
  const t0 = Date.parse('2026-11-01T00:00:00.000Z');

  async function publish(teamId: string, ownerId: string, name: string, version: [number, number]) {
    const project = await createProject(stack.db, { teamId, name: 'Apps' });
    const documentId = randomUUID();
    await stack.db.insertInto('documents').values({ id: documentId, project_id: project.id, name, graph: JSON.stringify(graph), created_by: ownerId }).execute();
    const deploymentId = randomUUID();
    await stack.db.insertInto('deployments').values({
      id: deploymentId, document_id: documentId, project_id: project.id, team_id: teamId, version_major: version[0], version_minor: version[1],
      snapshot: JSON.stringify(graph), api_schema: JSON.stringify({ inputs: [] }), published_by: ownerId,
    }).execute();
    return { deploymentId, documentId };
  }

  async function addRun(app: { deploymentId: string; documentId: string }, teamId: string, at: Date, extra: Partial<{ status: 'running' | 'completed' | 'failed'; inputs: unknown; result: unknown; error: string; userId: string }> = {}) {
    const id = randomUUID();
    await stack.db.insertInto('runs').values({
      id, deployment_id: app.deploymentId, document_id: app.documentId, team_id: teamId, trigger_source: 'api-key',
      user_id: extra.userId ?? null, status: extra.status ?? 'completed', inputs: JSON.stringify(extra.inputs ?? {}),
      result: extra.result === undefined ? null : JSON.stringify(extra.result), error: extra.error ?? null,
      created_at: at, finished_at: extra.status === 'running' ? null : new Date(at.getTime() + 1500),
    }).execute();
    return id;
  }

  const get = (url: string, token?: string) =>
    stack.app.inject({ method: 'GET', url, headers: token ? { authorization: `Bearer ${token}` } : {} });

  let appA: { deploymentId: string; documentId: string };
  let appB: { deploymentId: string; documentId: string };
  let appC: { deploymentId: string; documentId: string };
  /** Alice's visible runs, newest first. */
  let aliceRuns: string[];
  let detailRun: string;
  let bobRun: string;

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
    alice = (await make.user('alice')).id;
    bob = (await make.user('bob')).id;
    teamA = (await make.team(alice, 'A')).id;
    teamB = (await make.team(bob, 'B')).id;
    teamC = (await make.team(bob, 'C')).id;
    await stack.db.insertInto('team_members').values({ team_id: teamB, user_id: alice, role: 'member' }).execute();
    aliceJwt = await make.jwt(alice);
    bobJwt = await make.jwt(bob);
    aliceKey = (await make.apiKey(teamA, alice)).token;
    appA = await publish(teamA, alice, 'Summarizer', [2, 3]);
    appB = await publish(teamB, bob, 'Translator', [1, 0]);
    appC = await publish(teamC, bob, 'Secret app', [1, 0]);

    const at = (minutes: number) => new Date(t0 + minutes * 60_000);
    const ids: Array<[number, string]> = [];
    for (let i = 0; i < 6; i++) ids.push([i, await addRun(appA, teamA, at(i))]);
    for (let i = 0; i < 3; i++) ids.push([10 + i, await addRun(appB, teamB, at(10 + i), { status: 'failed', error: 'boom' })]);
    // Two runs at the same instant: the id breaks the tie and pagination must not skip either.
    const tieA = await addRun(appA, teamA, at(20));
    const tieB = await addRun(appA, teamA, at(20));
    detailRun = await addRun(appA, teamA, at(30), {
      userId: alice, inputs: { name: 'Ada', password: 'hunter2', nested: { api_key: 'wfk-secret', keep: 1, maxTokens: 5 }, list: [{ accessToken: 't', clientSecret: 's' }] },
      result: { greeting: 'hello Ada' },
    });
    bobRun = await addRun(appC, teamC, at(40));
    aliceRuns = [
      detailRun,
      ...[tieA, tieB].sort().reverse(),
      ...ids.sort((a, b) => b[0] - a[0]).map(([, id]) => id),
    ];
  });
  afterAll(() => stack?.close());

  it('lists the runs of every team the caller belongs to, newest first, with version and document name', async () => {
    const res = await get('/runs', aliceJwt);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.runs.map((r: { id: string }) => r.id)).toEqual(aliceRuns);
    expect(body.nextCursor).toBeNull();
    expect(body.runs).not.toContainEqual(expect.objectContaining({ id: bobRun }));
    expect(body.runs[0]).toEqual({
      id: detailRun, status: 'completed', triggerSource: 'api-key', teamId: teamA, deploymentId: appA.deploymentId,
      documentId: appA.documentId, documentName: 'Summarizer', version: '2.3', error: null,
      createdAt: '2026-11-01T00:30:00.000Z', finishedAt: '2026-11-01T00:30:01.500Z',
    });
    expect(body.runs[0].inputs).toBeUndefined(); // the list stays small; details have inputs and result
    const failed = body.runs.find((r: { teamId: string }) => r.teamId === teamB);
    expect(failed).toMatchObject({ status: 'failed', error: 'boom', documentName: 'Translator', version: '1.0' });
  });

  it('another user sees only their own teams', async () => {
    const res = await get('/runs', bobJwt);
    const ids = res.json().runs.map((r: { id: string }) => r.id);
    expect(ids).toContain(bobRun);
    expect(ids).not.toContain(detailRun); // teamA: bob is not a member
    expect(ids).toHaveLength(4); // teamB (3) + teamC (1)
  });

  it('pages with a cursor without skipping or repeating (ties included)', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await get(`/runs?limit=2${cursor ? `&cursor=${cursor}` : ''}`, aliceJwt);
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(body.runs.length).toBeLessThanOrEqual(2);
      seen.push(...body.runs.map((r: { id: string }) => r.id));
      cursor = body.nextCursor;
      pages++;
    } while (cursor && pages < 20);
    expect(seen).toEqual(aliceRuns);
    expect(pages).toBe(Math.ceil(aliceRuns.length / 2));
  });

  it('pages with an offset', async () => {
    const res = await get('/runs?limit=3&offset=3', aliceJwt);
    expect(res.json().runs.map((r: { id: string }) => r.id)).toEqual(aliceRuns.slice(3, 6));
    expect(res.json().nextCursor).toEqual(expect.any(String));
    const past = await get(`/runs?offset=${aliceRuns.length}`, aliceJwt);
    expect(past.json()).toEqual({ runs: [], nextCursor: null });
  });

  it('limit defaults to 50 and is at most 200', async () => {
    const many = await publish(teamA, alice, 'Busy', [1, 0]);
    for (let i = 0; i < 55; i++) await addRun(many, teamA, new Date(t0 - (i + 1) * 1000));
    const res = await get(`/runs?deploymentId=${many.deploymentId}`, aliceJwt);
    expect(res.json().runs).toHaveLength(50);
    expect(res.json().nextCursor).toEqual(expect.any(String));
    const rest = await get(`/runs?deploymentId=${many.deploymentId}&cursor=${res.json().nextCursor}`, aliceJwt);
    expect(rest.json().runs).toHaveLength(5);
    expect(rest.json().nextCursor).toBeNull();
    expect((await get('/runs?limit=200', aliceJwt)).statusCode).toBe(200);
  });

  it('filters by deployment, document, team and status', async () => {
    const byDeployment = (await get(`/runs?deploymentId=${appB.deploymentId}`, aliceJwt)).json().runs;
    expect(byDeployment).toHaveLength(3);
    expect(byDeployment.every((r: { deploymentId: string }) => r.deploymentId === appB.deploymentId)).toBe(true);
    const byDocument = (await get(`/runs?documentId=${appA.documentId}`, aliceJwt)).json().runs;
    expect(byDocument).toHaveLength(9);
    expect((await get(`/runs?teamId=${teamB}&status=failed`, aliceJwt)).json().runs).toHaveLength(3);
    expect((await get(`/runs?teamId=${teamA}&status=failed`, aliceJwt)).json().runs).toHaveLength(0);
    // A filter on another team's deployment finds nothing rather than leaking it.
    expect((await get(`/runs?deploymentId=${appC.deploymentId}`, aliceJwt)).json()).toEqual({ runs: [], nextCursor: null });
  });

  it.each([
    ['limit=0'], ['limit=201'], ['limit=abc'], ['offset=-1'], ['deploymentId=nope'], ['documentId=123'], ['status=weird'],
  ])('refuses %s with 400 invalid_request', async (query) => {
    const res = await get(`/runs?${query}`, aliceJwt);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_request');
  });

  it('refuses cursor and offset together, and a cursor it did not issue', async () => {
    const first = (await get('/runs?limit=1', aliceJwt)).json();
    const both = await get(`/runs?cursor=${first.nextCursor}&offset=1`, aliceJwt);
    expect(both.statusCode).toBe(400);
    expect(both.json().error).toBe('invalid_request');
    for (const bad of ['abc', Buffer.from('2026-11-01|x').toString('base64url'), Buffer.from(`yesterday|${randomUUID()}`).toString('base64url'), '!!']) {
      const res = await get(`/runs?cursor=${encodeURIComponent(bad)}`, aliceJwt);
      expect(res.statusCode, bad).toBe(400);
      expect(res.json().error).toMatch(/^invalid_(cursor|request)$/);
    }
  });

  it('GET /runs/:runId returns the run with inputs (secrets redacted), result, error and timestamps', async () => {
    const res = await get(`/runs/${detailRun}`, aliceJwt);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      run: {
        id: detailRun, status: 'completed', triggerSource: 'api-key', teamId: teamA, deploymentId: appA.deploymentId,
        documentId: appA.documentId, documentName: 'Summarizer', version: '2.3', error: null,
        createdAt: '2026-11-01T00:30:00.000Z', finishedAt: '2026-11-01T00:30:01.500Z',
        inputs: { name: 'Ada', password: '[redacted]', nested: { api_key: '[redacted]', keep: 1, maxTokens: 5 }, list: [{ accessToken: '[redacted]', clientSecret: '[redacted]' }] },
        result: { greeting: 'hello Ada' },
      },
    });
    const failed = aliceRuns.find((id) => id !== detailRun)!;
    expect((await get(`/runs/${failed}`, aliceJwt)).json().run).toMatchObject({ result: null });
  });

  it('a run of a team the caller is not in, or none at all, is 404 Run not found; a malformed id is 400', async () => {
    for (const [token, id] of [[aliceJwt, bobRun], [bobJwt, detailRun], [aliceJwt, randomUUID()]] as const) {
      const res = await get(`/runs/${id}`, token);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ error: 'Run not found', message: 'Run not found' });
    }
    const bad = await get('/runs/not-a-uuid', aliceJwt);
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toBe('invalid_request');
  });

  it('a member who left the team no longer sees its runs', async () => {
    const carol = (await make.user('carol')).id;
    await stack.db.insertInto('team_members').values({ team_id: teamA, user_id: carol, role: 'member' }).execute();
    const carolJwt = await make.jwt(carol);
    expect((await get(`/runs/${detailRun}`, carolJwt)).statusCode).toBe(200);
    await stack.db.deleteFrom('team_members').where('team_id', '=', teamA).where('user_id', '=', carol).execute();
    expect((await get(`/runs/${detailRun}`, carolJwt)).statusCode).toBe(404);
    expect((await get('/runs', carolJwt)).json().runs).toEqual([]);
  });

  it('JWT only: an API key gets 403, no credential 401', async () => {
    for (const url of ['/runs', `/runs/${detailRun}`]) {
      const withKey = await get(url, aliceKey);
      expect(withKey.statusCode).toBe(403);
      expect(withKey.json()).toMatchObject({ error: 'This endpoint only accepts JWT authentication' });
      const viaHeader = await stack.app.inject({ method: 'GET', url, headers: { 'x-api-key': aliceKey } });
      expect(viaHeader.statusCode).toBe(401);
      const anonymous = await get(url);
      expect(anonymous.statusCode).toBe(401);
      expect(anonymous.json().error).toBe('Missing or invalid authorization header');
    }
  });
});
