import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { PRIVATE_APP_MESSAGE } from '../../shared/app-runs/run-access.js';
import { siteSettingDefinitions } from '../../shared/site-settings/schemas.js';
import { credentialFactory } from '../harness/credentials.js';
import { withSetting as withSettingOf } from '../harness/settings.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { releaseTenant, releaseWith } from '../releases/fixture.js';
import { deleteTemporalSchedules } from '../schedules/helpers.js';

// Every run-starting route goes through one service call (shared/app-runs/run-service.ts). Each
// describe below proves, on its own route, that the shared pipeline applies there: input limits,
// the timeout cap, the access rule, the body cap on chunked bodies, and (on the run route) that a
// failed run keeps its sessions (spec §2.20).

/** One optional text input, echoed: any route can run it with or without inputs. */
const echoGraph: Graph = {
  blocks: [
    { id: 'q', type: 'input', name: 'name', config: { valueType: 'string', required: false, default: 'nobody' } },
    { id: 'o', type: 'output', name: 'result', config: { value: '{{q}}' } },
  ],
  edges: [{ from: 'q', to: 'o' }],
};

/** A transform that completes, then one that fails with a long, multi-line JSONata error. */
const failingGraph: Graph = {
  blocks: [
    { id: 'ok', type: 'transform', name: 'first', config: { expression: "'fine'" } },
    { id: 'boom', type: 'transform', name: 'second', config: { expression: "$error('boom\\nsecond line ' & $pad('', 700, 'x'))" } },
  ],
  edges: [{ from: 'ok', to: 'boom' }],
};

/** `{ a: { a: … 'leaf' } }`: as an input field, `depth` deep (`inputs.extra` itself is depth 1). */
const nest = (depth: number): unknown => (depth === 1 ? 'leaf' : { a: nest(depth - 1) });
const DEEP_MESSAGE = 'Input nesting depth 33 exceeds the limit of 32';
const INPUT_LIMIT_DEFAULTS = siteSettingDefinitions['run.input_limit'].defaults;
const BODY_CAP = 2048;

type Reply = Awaited<ReturnType<TestStack['app']['inject']>>;

describe('the shared run pipeline on every run-starting route', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  /** The app owner's funded team, with a project holding the apps below and a key for anonymous release calls. */
  let tenant: Awaited<ReturnType<typeof releaseTenant>>;
  /** Another funded team: no access to the owner's private apps (the grantee of cross-team bindings). */
  let stranger: Awaited<ReturnType<ReturnType<typeof credentialFactory>['fundedTenant']>>;
  let ownerJwt: string;
  /** echoGraph, private, in the tenant's project. */
  let echo: { documentId: string; deploymentId: string };

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const post = (url: string, headers: Record<string, string>, body: unknown) =>
    stack.app.inject({ method: 'POST', url, headers: { ...headers, 'content-type': 'application/json' }, payload: JSON.stringify(body) });

  /** Sends `body` as JSON in 512-byte chunks from a stream: no Content-Length, as a chunked upload. */
  const postChunked = async (url: string, headers: Record<string, string>, body: unknown) => {
    const bytes = Buffer.from(JSON.stringify(body));
    const chunks: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += 512) chunks.push(bytes.subarray(at, at + 512));
    const res = await stack.app.inject({
      method: 'POST', url, headers: { ...headers, 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, payload: Readable.from(chunks),
    });
    // The request really had no Content-Length: the cap had to count the bytes as they came.
    expect(res.raw.req.headers['content-length']).toBeUndefined();
    return { res, size: bytes.length };
  };

  /** How many runs and run charges there are: a refused request must leave both as they were. */
  const recorded = async () => {
    const runs = await stack.db.selectFrom('runs').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
    const charges = await stack.db.selectFrom('credit_transactions').select((eb) => eb.fn.countAll().as('n')).where('reason', '=', 'run').executeTakeFirstOrThrow();
    const balances = await stack.db.selectFrom('credit_balances').select(['team_id', 'balance_milli']).orderBy('team_id').execute();
    return { runs: Number(runs.n), charges: Number(charges.n), balances };
  };
  /** Runs `request` and checks that it wrote no run and charged nobody. */
  const nothingRecorded = async (request: () => Promise<Reply>): Promise<Reply> => {
    const before = await recorded();
    const res = await request();
    expect(await recorded(), `answered ${res.statusCode} ${res.body.slice(0, 200)}`).toEqual(before);
    return res;
  };
  const timeoutOf = async (runId: string) =>
    (await stack.db.selectFrom('runs').select('timeout_seconds').where('id', '=', runId).executeTakeFirstOrThrow()).timeout_seconds;

  const withSetting = (key: string, value: unknown, body: () => Promise<void>) => withSettingOf(stack, key, value, body);
  const withMaxTimeout = (seconds: number, body: () => Promise<void>) => withSetting('run.max_timeout_seconds', seconds, body);
  const withBodyCap = (body: () => Promise<void>) => withSetting('run.input_limit', { ...INPUT_LIMIT_DEFAULTS, maxBodyBytes: BODY_CAP }, body);

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
    make = credentialFactory(stack);
    tenant = await releaseTenant(stack);
    stranger = await make.fundedTenant(100_000);
    ownerJwt = await make.jwt(tenant.owner.id);
    echo = await tenant.publish('private', echoGraph);
  });
  afterAll(async () => {
    if (!stack) return;
    await deleteTemporalSchedules(stack);
    await stack.close();
  });

  describe('POST /api/released-app/:deploymentId/run and /d/:documentId/run', () => {
    const byDeployment = () => `/api/released-app/${echo.deploymentId}/run`;
    const byDocument = () => `/api/released-app/d/${echo.documentId}/run`;

    it.each([['by deployment', byDeployment], ['by document', byDocument]])('input limits (%s): 33 deep is 400 input_structure_too_deep, nothing recorded', async (_label, url) => {
      const res = await nothingRecorded(() => post(url(), bearer(tenant.apiKey), { inputs: { extra: nest(33) }, stream: false }));
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toEqual({ error: 'input_structure_too_deep', message: DEEP_MESSAGE, field: 'inputs.extra', actual: 33, limit: 32 });
    });

    it('timeout cap: run.max_timeout_seconds caps a larger or missing timeout; a smaller one stays', async () => {
      await withMaxTimeout(7, async () => {
        for (const [url, body, expected] of [
          [byDeployment(), { stream: false, timeout: 999 }, 7],
          [byDocument(), { stream: false, timeout: 999 }, 7],
          [byDeployment(), { stream: false }, 7],
          [byDocument(), { stream: false, timeout: 3 }, 3],
        ] as const) {
          const res = await post(url, bearer(tenant.apiKey), body);
          expect(res.statusCode, res.body).toBe(200);
          expect([url, body, await timeoutOf(res.json().runId)]).toEqual([url, body, expected]);
        }
      });
    });

    it("access: another team's key on a private app is 403 on both routes, nothing recorded", async () => {
      for (const url of [byDeployment(), byDocument()]) {
        const res = await nothingRecorded(() => post(url, bearer(stranger.apiKey), { stream: false }));
        expect([url, res.statusCode, res.json()]).toEqual([url, 403, { error: PRIVATE_APP_MESSAGE, message: PRIVATE_APP_MESSAGE }]);
      }
    });

    it('a chunked body over run.input_limit.maxBodyBytes is 413 on both routes, nothing recorded; one under it runs', async () => {
      await withBodyCap(async () => {
        for (const url of [byDeployment(), byDocument()]) {
          let size = 0;
          const res = await nothingRecorded(async () => {
            const sent = await postChunked(url, bearer(tenant.apiKey), { inputs: { name: 'y'.repeat(4000) }, stream: false });
            size = sent.size;
            return sent.res;
          });
          expect(size).toBeGreaterThan(BODY_CAP);
          expect([url, res.statusCode, res.json().error]).toEqual([url, 413, 'request_body_too_large']);
        }
        const small = await postChunked(byDeployment(), bearer(tenant.apiKey), { inputs: { name: 'z'.repeat(1000) }, stream: false });
        expect(small.size).toBeLessThan(BODY_CAP);
        expect(small.res.statusCode, small.res.body).toBe(200);
        expect(small.res.json()).toMatchObject({ status: 'completed', sessions: [{ blockId: 'o', output: 'z'.repeat(1000) }] });
      });
    });

    it('a chunked body over the cap through a real socket (fetch, duplex half) is 413 too', async () => {
      await withBodyCap(async () => {
        await stack.app.listen({ port: 0, host: '127.0.0.1' });
        const { port } = stack.app.server.address() as AddressInfo;
        const bytes = new TextEncoder().encode(JSON.stringify({ inputs: { name: 'y'.repeat(4000) }, stream: false }));
        const before = await recorded();
        const res = await fetch(`http://127.0.0.1:${port}${byDeployment()}`, {
          method: 'POST', headers: { ...bearer(tenant.apiKey), 'content-type': 'application/json' }, duplex: 'half',
          body: new ReadableStream<Uint8Array>({
            start(controller) {
              for (let at = 0; at < bytes.length; at += 512) controller.enqueue(bytes.subarray(at, at + 512));
              controller.close();
            },
          }),
        } as RequestInit & { duplex: 'half' });
        expect(res.status).toBe(413);
        expect((await res.json() as { error: string }).error).toBe('request_body_too_large');
        expect(await recorded()).toEqual(before);
      });
    });

    describe('a failed run keeps its sessions (spec §2.20)', () => {
      let failing: { deploymentId: string };
      const expectedSessions = (trace: boolean) => [
        { blockId: 'ok', blockType: 'transform', blockName: 'first', status: 'completed', output: 'fine' },
        {
          blockId: 'boom', blockType: 'transform', blockName: 'second', status: 'error', output: null,
          ...(trace ? { error: expect.stringMatching(/boom second line x+…$/) } : {}),
        },
      ];
      beforeAll(async () => {
        failing = await tenant.publish('private', failingGraph);
      });

      it('JSON mode: status failed, the completed session and the failed one (no error without trace)', async () => {
        const res = await post(`/api/released-app/${failing.deploymentId}/run`, bearer(tenant.apiKey), { stream: false });
        expect(res.statusCode, res.body).toBe(200);
        const body = res.json();
        expect(body).toMatchObject({ status: 'failed', timedOut: false, error: expect.stringContaining("Block 'boom' failed") });
        expect(body.sessions).toEqual(expectedSessions(false));
        expect(body.sessions[1]).not.toHaveProperty('error');
      });

      it('JSON mode with ?trace=full: the failed session carries a sanitized error of at most 500 characters', async () => {
        const res = await post(`/api/released-app/${failing.deploymentId}/run?trace=full`, bearer(tenant.apiKey), { stream: false });
        expect(res.statusCode, res.body).toBe(200);
        const body = res.json();
        expect(body.status).toBe('failed');
        expect(body.sessions).toEqual(expectedSessions(true));
        const error = body.sessions[1].error as string;
        // The message was over 700 characters with a newline: one line, cut to 500 with an ellipsis.
        expect(error.length).toBeLessThanOrEqual(500);
        expect(error).toMatch(/…$/);
        // eslint-disable-next-line no-control-regex
        expect(error).not.toMatch(/[\u0000-\u001f]/);
      });

      it('stream mode: the final run_error event carries the same sessions', async () => {
        const res = await post(`/api/released-app/${failing.deploymentId}/run`, bearer(tenant.apiKey), {});
        expect(res.statusCode, res.body).toBe(200);
        const events = res.body.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
        const last = events.at(-1)!;
        expect(last).toMatchObject({ type: 'run_error', runId: res.headers['x-run-id'], executionStatus: 'failed' });
        expect(last.sessions).toEqual(expectedSessions(false));
        expect(events.filter((e) => e.type === 'run_error')).toHaveLength(1);
      });
    });
  });

  describe('POST /v1/workflows/:id/run', () => {
    const url = () => `/v1/workflows/${echo.documentId}/run`;

    it('input limits: the text is measured like any input (400 input_field_too_large), nothing recorded', async () => {
      // The one input of /v1 is a string, so it cannot be nested: a field-size limit shows the same check.
      await withSetting('run.input_limit', { ...INPUT_LIMIT_DEFAULTS, maxFieldBytes: 64 }, async () => {
        const res = await nothingRecorded(() => post(url(), bearer(tenant.apiKey), { input: 'x'.repeat(100) }));
        expect(res.statusCode, res.body).toBe(400);
        expect(res.json()).toMatchObject({ error: 'input_field_too_large', field: 'inputs.name', actual: 102, limit: 64 });
      });
    });

    it('timeout cap: the run records run.max_timeout_seconds', async () => {
      await withMaxTimeout(7, async () => {
        const res = await post(url(), bearer(tenant.apiKey), { input: 'hi' });
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json()).toMatchObject({ status: 'completed', output: 'hi' });
        expect(await timeoutOf(res.json().id)).toBe(7);
      });
    });

    it("access: another team's key is 403 on the private workflow, nothing recorded", async () => {
      const res = await nothingRecorded(() => post(url(), bearer(stranger.apiKey), { input: 'x' }));
      expect([res.statusCode, res.json()]).toEqual([403, { error: PRIVATE_APP_MESSAGE, message: PRIVATE_APP_MESSAGE }]);
    });

    it('a chunked body over run.input_limit.maxBodyBytes is 413, nothing recorded', async () => {
      await withBodyCap(async () => {
        const res = await nothingRecorded(async () => (await postChunked(url(), bearer(tenant.apiKey), { input: 'y'.repeat(4000) })).res);
        expect([res.statusCode, res.json().error]).toEqual([413, 'request_body_too_large']);
      });
    });
  });

  describe('POST /api/released-app/cross-team/proxy', () => {
    let bindingId: string;
    const proxy = (body: object, token = stranger.apiKey) => post('/api/released-app/cross-team/proxy', bearer(token), body);
    const grant = async (documentId: string) => {
      const res = await post(`/teams/${tenant.team.id}/cross-team-bindings`, bearer(ownerJwt), { documentId, granteeTeamId: stranger.team.id });
      expect(res.statusCode, res.body).toBe(201);
      return res.json().binding.id as string;
    };

    beforeAll(async () => {
      bindingId = await grant(echo.documentId);
    });

    it('input limits: 33 deep is 400 input_structure_too_deep, nothing recorded', async () => {
      const res = await nothingRecorded(() => proxy({ bindingId, inputs: { extra: nest(33) } }));
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toEqual({ error: 'input_structure_too_deep', message: DEEP_MESSAGE, field: 'inputs.extra', actual: 33, limit: 32 });
    });

    it('timeout cap: the run records run.max_timeout_seconds', async () => {
      await withMaxTimeout(7, async () => {
        const res = await proxy({ bindingId, inputs: { name: 'granted' } });
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json()).toMatchObject({ status: 'completed', sessions: [{ blockId: 'o', output: 'granted' }] });
        expect(await timeoutOf(res.json().runId)).toBe(7);
      });
    });

    it('access: a revoked binding is 404 Binding not found, nothing recorded', async () => {
      const other = await tenant.publish('private', echoGraph);
      const revoked = await grant(other.documentId);
      expect((await proxy({ bindingId: revoked, inputs: {} })).statusCode).toBe(200);
      const removed = await stack.app.inject({ method: 'DELETE', url: `/teams/${tenant.team.id}/cross-team-bindings/${revoked}`, headers: bearer(ownerJwt) });
      expect(removed.statusCode, removed.body).toBeLessThan(300);
      const res = await nothingRecorded(() => proxy({ bindingId: revoked, inputs: {} }));
      expect([res.statusCode, res.json()]).toEqual([404, { error: 'Binding not found', message: 'Binding not found' }]);
    });

    it('a chunked body over run.input_limit.maxBodyBytes is 413, nothing recorded', async () => {
      await withBodyCap(async () => {
        const res = await nothingRecorded(async () => (await postChunked('/api/released-app/cross-team/proxy', bearer(stranger.apiKey), { bindingId, inputs: { name: 'y'.repeat(4000) } })).res);
        expect([res.statusCode, res.json().error]).toEqual([413, 'request_body_too_large']);
      });
    });
  });

  describe('ALL /api/released-app/r/:alias/:version/* (release gateway)', () => {
    let release: Awaited<ReturnType<typeof releaseWith>>;

    beforeAll(async () => {
      release = await releaseWith(stack, {
        projectId: tenant.projectId, anonymousApiKeyId: tenant.releaseKey.id,
        endpoints: [
          { method: 'POST', path: '/echo', deploymentId: echo.deploymentId },
          { method: 'POST', path: '/open', deploymentId: tenant.publicApp.deploymentId, skipAuth: true },
          { method: 'POST', path: '/hidden', deploymentId: echo.deploymentId, skipAuth: true },
        ],
      });
    });

    it('input limits: 33 deep is 400 input_structure_too_deep, nothing recorded', async () => {
      const res = await nothingRecorded(() => post(release.url('1.0', '/echo'), bearer(tenant.apiKey), { extra: nest(33) }));
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toEqual({ error: 'input_structure_too_deep', message: DEEP_MESSAGE, field: 'inputs.extra', actual: 33, limit: 32 });
    });

    it('timeout cap: the run records run.max_timeout_seconds', async () => {
      await withMaxTimeout(7, async () => {
        const res = await post(release.url('1.0', '/echo'), bearer(tenant.apiKey), { name: 'released' });
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json()).toMatchObject({ status: 'completed', sessions: [{ blockId: 'o', output: 'released' }] });
        expect(await timeoutOf(res.json().runId)).toBe(7);
      });
    });

    it('access: an anonymous call to a skipAuth endpoint on a private deployment is 403, nothing recorded', async () => {
      // The same release lets an anonymous caller run its public skipAuth endpoint (its key pays).
      const open = await post(release.url('1.0', '/open'), {}, { name: 'Ada' });
      expect(open.statusCode, open.body).toBe(200);
      const res = await nothingRecorded(() => post(release.url('1.0', '/hidden'), {}, { name: 'Ada' }));
      expect([res.statusCode, res.json()]).toEqual([403, { error: PRIVATE_APP_MESSAGE, message: PRIVATE_APP_MESSAGE }]);
    });

    it('a chunked body over run.input_limit.maxBodyBytes is 413, nothing recorded', async () => {
      await withBodyCap(async () => {
        const res = await nothingRecorded(async () => (await postChunked(release.url('1.0', '/echo'), bearer(tenant.apiKey), { name: 'y'.repeat(4000) })).res);
        expect([res.statusCode, res.json().error]).toEqual([413, 'request_body_too_large']);
      });
    });
  });

  describe('POST /api/webhook-triggers/:webhookId', () => {
    let webhookId: string;
    let secret: string;
    const url = () => `/api/webhook-triggers/${webhookId}`;

    beforeAll(async () => {
      const res = await stack.app.inject({ method: 'POST', url: `/api/webhook-triggers/by-document/${echo.documentId}/rotate-secret`, headers: bearer(ownerJwt) });
      expect(res.statusCode, res.body).toBe(200);
      ({ id: webhookId, secret } = res.json() as { id: string; secret: string });
    });

    it('input limits: 33 deep is 400 { code: input_structure_too_deep }, nothing recorded', async () => {
      const res = await nothingRecorded(() => post(url(), bearer(secret), { extra: nest(33) }));
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toEqual({ code: 'input_structure_too_deep', message: DEEP_MESSAGE, field: 'inputs.extra', actual: 33, limit: 32 });
    });

    it('timeout cap: the run records run.max_timeout_seconds', async () => {
      await withMaxTimeout(7, async () => {
        const res = await post(url(), bearer(secret), { name: 'hooked' });
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json()).toMatchObject({ status: 'completed', sessions: [{ blockId: 'o', output: 'hooked' }] });
        expect(await timeoutOf(res.json().runId)).toBe(7);
      });
    });

    it('access: a wrong secret is 404 webhook_not_found, nothing recorded', async () => {
      const res = await nothingRecorded(() => post(url(), bearer(`${secret.slice(0, -1)}${secret.endsWith('x') ? 'y' : 'x'}`), { name: 'x' }));
      expect([res.statusCode, res.json()]).toEqual([404, { code: 'webhook_not_found', message: 'Webhook not found' }]);
    });

    it('a chunked body over run.input_limit.maxBodyBytes is 413 { code: request_body_too_large }, nothing recorded; one under it runs', async () => {
      await withBodyCap(async () => {
        const res = await nothingRecorded(async () => (await postChunked(url(), bearer(secret), { name: 'y'.repeat(4000) })).res);
        expect(res.statusCode, res.body).toBe(413);
        expect(res.json()).toMatchObject({ code: 'request_body_too_large' });
        const small = await postChunked(url(), bearer(secret), { name: 'small' });
        expect(small.res.statusCode, small.res.body).toBe(200);
        expect(small.res.json()).toMatchObject({ status: 'completed', sessions: [{ blockId: 'o', output: 'small' }] });
      });
    });
  });

  describe('scheduled runs (POST /projects/:projectId/schedules/:id/trigger)', () => {
    const createSchedule = async (fields: Record<string, unknown>) => {
      const res = await post(`/projects/${tenant.projectId}/schedules`, bearer(ownerJwt), {
        name: `job-${randomUUID().slice(0, 8)}`, cron_expression: '0 0 1 1 *', enabled: false, deployment_id: echo.deploymentId, ...fields,
      });
      expect(res.statusCode, res.body).toBe(201);
      return res.json().schedule.id as string;
    };
    const trigger = (scheduleId: string) => post(`/projects/${tenant.projectId}/schedules/${scheduleId}/trigger`, bearer(ownerJwt), {});
    const logsOf = (scheduleId: string) => stack.db.selectFrom('schedule_logs').selectAll().where('schedule_id', '=', scheduleId).execute();

    it('input limits: 33-deep trigger inputs refuse the attempt with the limit error, nothing recorded', async () => {
      const scheduleId = await createSchedule({ trigger_config: { inputs: { extra: nest(33) } } });
      const res = await nothingRecorded(() => trigger(scheduleId));
      expect([res.statusCode, res.json()]).toEqual([500, { success: false, error: DEEP_MESSAGE }]);
      expect(await logsOf(scheduleId)).toMatchObject([{ status: 'failed', run_id: null, error: DEEP_MESSAGE }]);
    });

    it('timeout cap: a timeout_ms above run.max_timeout_seconds records the cap', async () => {
      const scheduleId = await createSchedule({ timeout_ms: 60_000, trigger_config: { inputs: { name: 'cron' } } });
      await withMaxTimeout(7, async () => {
        const res = await trigger(scheduleId);
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json()).toMatchObject({ success: true, result: { status: 'completed', sessions: [{ blockId: 'o', output: 'cron' }] } });
        expect(await timeoutOf(res.json().result.runId)).toBe(7);
      });
    });

    it('access: a schedule token of another deployment is 403 Deployment ID mismatch on the run route, nothing recorded', async () => {
      const other = await tenant.publish('private', echoGraph);
      const token = (deploymentId: string) => stack.deps.scheduleTokens.issue({ scheduleId: randomUUID(), teamId: tenant.team.id, deploymentId }, 600);
      const res = await nothingRecorded(async () => post(`/api/released-app/${echo.deploymentId}/run`, bearer(await token(other.deploymentId)), { stream: false }));
      expect([res.statusCode, res.json().error]).toEqual([403, 'Deployment ID mismatch']);
      // The token of this very deployment runs it.
      const own = await post(`/api/released-app/${echo.deploymentId}/run`, bearer(await token(echo.deploymentId)), { stream: false });
      expect(own.statusCode, own.body).toBe(200);
    });
  });
});
