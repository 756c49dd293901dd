import { randomBytes, randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerApp } from '../../api/app.js';
import type { AccessRuleName } from '../../shared/credentials/access-matrix.js';
import { exampleGraph } from '../../shared/documents/example-graph.js';
import { createDocument } from '../../shared/documents/service.js';
import { createProject } from '../../shared/identity/service.js';
import { publishDocument } from '../../shared/publishing/service.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { billingFixtures } from '../billing/fixtures.js';
import { hardwareFixtures, testAddress, type Buyer } from '../hardware-sales/fixtures.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// Issue 38, "Another team's ids": every route with an id in its path answers an id that belongs to
// another team (or another user) exactly as it answers a random id: same status, same body (the id
// echoed aside), and nothing changes. The route list comes from the app itself (an `onRoute` hook
// on an app built by registerApp, as buildApp builds it), so a new route with an id fails this file
// until it gets a case below or an exemption with its reason.

type Cred = 'jwt' | 'apiKey' | 'oauth' | 'webhookSecret';
type Fixtures = Awaited<ReturnType<typeof makeFixtures>>;

interface Param {
  /** Ids that belong to team A (or user A): each must answer like `random()`. */
  foreign: (f: Fixtures) => string[];
  /** Team B's own id, used while another parameter of the route is varied (else a random one). */
  own?: (f: Fixtures) => string;
  /** A value of the id's shape that names nothing (default: a random uuid). */
  random?: () => string;
}

/** A path parameter the sweep does not vary, with the reason. */
interface Fixed { fixed: (f: Fixtures) => string; why: string }

interface Case {
  params: Record<string, Param | Fixed>;
  body?: (f: Fixtures) => unknown;
  /** Default: team B's credentials the route's access row accepts (`byAccess`). */
  creds?: Cred[];
  /** The status a random id gets: pins the sweep to the id check, not to a refused body. */
  status: number;
}

/** Routes with ids in their path that the rule does not cover, each with the reason. */
const EXEMPT: Record<string, string> = {
  'GET /docs/static/*': 'the API documentation UI assets: public files, no object of a team',
  'GET /object-store/*': 'signed object URLs of the storage capability: the signature, not the caller, decides (docs/storage.md)',
  'GET /api/released-app/r/:alias/:version/*': 'a release is a public address (spec 4.1): its own configuration decides who may call',
  'POST /api/released-app/r/:alias/:version/*': 'as GET: a public release address (spec 4.1)',
  'PUT /api/released-app/r/:alias/:version/*': 'as GET: a public release address (spec 4.1)',
  'PATCH /api/released-app/r/:alias/:version/*': 'as GET: a public release address (spec 4.1)',
  'DELETE /api/released-app/r/:alias/:version/*': 'as GET: a public release address (spec 4.1)',
  'OPTIONS /api/released-app/r/:alias/:version/*': 'CORS preflight of a public release address',
  'OPTIONS /public/hardware-sales*': 'CORS preflight of the public endpoints',
  'OPTIONS /public*': 'CORS preflight of the public endpoints',
  'GET /public/hardware-sales/skus/:sku/config': 'public catalogue (spec 4.10): a SKU belongs to no team',
  'GET /public/firmware/:model/:module/:fileName': 'public downloads for devices (spec 4.10)',
  'GET /public/board/firmware/:channel/:sha256/*': 'public downloads for devices (spec 4.10)',
  'GET /public/board/app/:platform/:sha256/*': 'public downloads for devices (spec 4.10)',
  'POST /webhook/:provider': 'a payment provider name, not an id; callbacks are checked by signature (spec 4.7)',
  'GET /approve/:token': 'the approval link: its token is the credential (a capability URL); unknown, used and expired all answer 410 (test/long-runs/approval-link.test.ts)',
  'POST /approve/:token': 'as GET: the approval link\'s token is the credential; unknown, used and expired all answer 410',
  'POST /api/released-app/:deploymentId/run': "spec 7.2: a private app the credential has no access to is 403 `Permission denied: This is a private app...`, an unknown id 404",
  'POST /api/released-app/d/:documentId/run': 'spec 7.2, as the deployment id route: 403 for a private app of another team',
  'POST /v1/workflows/:id/run': 'a run endpoint of spec 4.1: 7.2 answers a private app of another team 403 (test/app-runs/v1.test.ts pins it)',
  'GET /projects/:projectId/schedules': 'spec 7.4: a project the caller is not a member of is 403 `no access to the project`, a missing one 404 (docs/decisions.md "Schedules")',
  'POST /projects/:projectId/schedules': 'spec 7.4, as GET: 403 `no access to the project` for another team\'s project',
  // The data API (spec 4.11): the path names a relation or a function, not an object; which rows a
  // caller reaches is the row-level-security policies' rule (test/data-api).
  'OPTIONS /rest/v1*': 'CORS preflight of the data API',
  'GET /rest/v1/rpc/:fn': 'data API: a function name, not an id (spec 4.11)',
  'POST /rest/v1/rpc/:fn': 'data API: a function name, not an id (spec 4.11)',
  'GET /rest/v1/:relation': 'data API: a relation name, not an id; rows are filtered by row-level security (spec 4.11)',
  'POST /rest/v1/:relation': 'data API: a relation name, not an id; rows are filtered by row-level security (spec 4.11)',
  'PATCH /rest/v1/:relation': 'data API: a relation name, not an id; rows are filtered by row-level security (spec 4.11)',
  'PUT /rest/v1/:relation': 'data API: a relation name, not an id; rows are filtered by row-level security (spec 4.11)',
  'DELETE /rest/v1/:relation': 'data API: a relation name, not an id; rows are filtered by row-level security (spec 4.11)',
  // The data API's storage (docs/storage.md "Data API storage"): bucket `banners` is public, its
  // object names are chosen by uploaders and readable by anyone; changing another uploader's object
  // is 403 AccessDenied in the storage protocol supabase-js speaks.
  'OPTIONS /storage/v1*': 'CORS preflight of the data API storage',
  'GET /storage/v1/object/public/:bucket/*': 'a public bucket: a bucket name and a public object name, no team object',
  'POST /storage/v1/object/:bucket/*': "a bucket name and an uploader's object name; another uploader's object is 403 AccessDenied by the storage protocol",
  'PUT /storage/v1/object/:bucket/*': "a bucket name and an uploader's object name; another uploader's object is 403 AccessDenied by the storage protocol",
  'DELETE /storage/v1/object/:bucket': 'a bucket name; the object names are in the body',
  // Realtime's HTTP broadcast (docs/realtime.md): the topic names a team, project or document;
  // another team's topic and a missing one both get the same "no permission to write" refusal
  // (test/realtime/http-broadcast.test.ts).
  'OPTIONS /realtime/v1/api*': 'CORS preflight of realtime\'s HTTP endpoints',
  'POST /realtime/v1/api/broadcast/:topic/events/:event': 'a topic name; a non-member\'s topic, existing or not, is the same 403 (tested in test/realtime/http-broadcast.test.ts)',
  'DELETE /my/credentials/agent-tokens/:bindingId': 'spec 7.4: a binding that does not belong to the caller is 403 Forbidden, a missing one 404',
  'DELETE /my/credentials/agent-bindings-as-agent/:bindingId': 'spec 7.4: a binding that does not belong to the caller is 403 Forbidden, a missing one 404',
};

/** Team B's credentials each access row accepts (spec 5.3). */
const byAccess: Partial<Record<AccessRuleName, Cred[]>> = {
  teamAdmin: ['jwt'], myCredentials: ['jwt'], runsList: ['jwt'], connectors: ['jwt'], hardwareSales: ['jwt', 'oauth'],
  combined: ['jwt', 'apiKey'], runFollowUp: ['jwt', 'apiKey', 'oauth'], v1: ['apiKey'], deploymentRun: ['apiKey'], documentRun: ['apiKey'],
};

const teamId: Param = { foreign: (f) => [f.a.teamId], own: (f) => f.b.teamId };
const projectId: Param = { foreign: (f) => [f.a.projectId], own: (f) => f.b.projectId };
/** A's private document and its public one: a public app is runnable by anyone, not manageable. */
const documentId: Param = { foreign: (f) => [f.a.documentId, f.a.publicDocumentId] };
const runId: Param = { foreign: (f) => [f.a.runId] };
const appId: Param = { foreign: (f) => [f.a.oauthAppId] };
const orderNo: Param = { foreign: (f) => [f.a.orderNo], random: () => `HWO2026${randomBytes(8).toString('hex').replace(/\D/g, '7').slice(0, 16)}` };
/** Team B's own project: spec 7.4 answers another team's project 403 on the schedule routes (exempt below). */
const scheduleProject: Fixed = { fixed: (f) => f.b.projectId, why: 'spec 7.4: a project outside the team is 403 `no access to the project` (docs/decisions.md "Schedules")' };
const providerName: Fixed = { fixed: () => 'openai', why: 'a provider name the team chooses, not an id' };

const CASES: Record<string, Case> = {
  'GET /oauth/apps/:appId': { params: { appId }, status: 404 },
  'PATCH /oauth/apps/:appId': { params: { appId }, body: () => ({ name: 'Taken over' }), status: 404 },
  'DELETE /oauth/apps/:appId': { params: { appId }, status: 404 },
  'DELETE /oauth/apps/:appId/clients/:clientId': {
    params: { appId: { ...appId, own: (f) => f.b.ownOAuthAppId }, clientId: { foreign: (f) => [f.a.oauthClientId], own: (f) => f.b.oauthClientId } },
    status: 404,
  },
  'POST /oauth/apps/:appId/clients': { params: { appId }, body: () => ({ platform: 'web', redirectUris: ['https://example.com/cb'], scopes: ['profile:read'] }), status: 404 },
  'POST /oauth/apps/:appId/review': { params: { appId }, body: () => ({ decision: 'approve' }), status: 403 },
  'POST /oauth/apps/:appId/offline': { params: { appId }, status: 403 },
  'POST /oauth/apps/:appId/online': { params: { appId }, status: 403 },
  'DELETE /my/credentials/oauth-authorizations/:appId': { params: { appId }, status: 200 },

  'POST /teams/:teamId/api-keys': { params: { teamId }, body: () => ({ name: 'Mine now' }), status: 404 },
  'GET /teams/:teamId/api-keys': { params: { teamId }, status: 404 },
  'DELETE /teams/:teamId/api-keys/:keyId': { params: { teamId, keyId: { foreign: (f) => [f.a.apiKeyId] } }, status: 404 },
  'GET /teams/:teamId/projects': { params: { teamId }, status: 404 },
  'POST /teams/:teamId/agents': { params: { teamId }, body: () => ({ name: 'Mine now' }), status: 404 },
  'GET /teams/:teamId/agents': { params: { teamId }, status: 404 },
  'POST /teams/:teamId/agents/:agentId/tokens': { params: { teamId, agentId: { foreign: (f) => [f.a.agentId] } }, status: 404 },
  'POST /teams/:teamId/agents/:bindingId/revoke-token': { params: { teamId, bindingId: { foreign: (f) => [f.a.agentBindingId] } }, status: 404 },
  'PATCH /teams/:teamId/agents/:agentId': { params: { teamId, agentId: { foreign: (f) => [f.a.agentId] } }, body: () => ({ name: 'Mine now' }), status: 404 },
  'DELETE /teams/:teamId/agents/:agentId': { params: { teamId, agentId: { foreign: (f) => [f.a.agentId] } }, status: 404 },
  'GET /teams/:teamId/agents/bindings': { params: { teamId }, status: 404 },
  'PATCH /teams/:teamId/agents/bindings/:bindingId': { params: { teamId, bindingId: { foreign: (f) => [f.a.agentBindingId] } }, body: () => ({ canSend: false }), status: 404 },
  'POST /teams/:teamId/cross-team-bindings': { params: { teamId }, body: (f) => ({ documentId: f.b.documentId, granteeTeamId: f.a.teamId }), status: 404 },
  'GET /teams/:teamId/cross-team-bindings': { params: { teamId }, status: 404 },
  'DELETE /teams/:teamId/cross-team-bindings/:bindingId': { params: { teamId, bindingId: { foreign: (f) => [f.a.crossTeamBindingId] } }, status: 404 },
  'PUT /teams/:teamId/llm-providers/:name': {
    params: { teamId, name: providerName },
    body: () => ({ baseUrl: 'https://llm.example.com/v1', apiKey: 'sk-test-0123456789' }), status: 404,
  },
  'GET /teams/:teamId/llm-providers': { params: { teamId }, status: 404 },
  'DELETE /teams/:teamId/llm-providers/:name': { params: { teamId, name: providerName }, status: 404 },
  'GET /billing/orders/:orderId': { params: { orderId: { foreign: (f) => [f.a.billingOrderId] } }, status: 404 },

  'GET /api/runs/:runId/events': { params: { runId }, status: 404 },
  'POST /api/runs/:runId/cancel': { params: { runId }, status: 404 },
  'POST /api/runs/:runId/approvals/:blockId': { params: { runId, blockId: { fixed: () => 'ok', why: "a block id of the run's graph, not an object" } }, body: () => ({ approved: true }), status: 404 },
  'GET /api/runs/:runId/deliveries': { params: { runId }, status: 404 },
  'POST /api/runs/:runId/retry': { params: { runId }, body: () => ({}), status: 404 },
  'POST /teams/:teamId/outbound-webhook-secret': { params: { teamId }, status: 404 },
  'GET /runs/:runId': { params: { runId }, status: 404 },
  'GET /v1/runs/:id': { params: { id: runId }, status: 404 },
  'GET /v1/workflows/:id/runs': { params: { id: { foreign: (f) => [f.a.documentId, f.a.deploymentId, f.a.publicDocumentId, f.a.publicDeploymentId] } }, status: 404 },

  'POST /projects/:projectId/documents': { params: { projectId }, body: () => ({ name: 'Mine now', graph: exampleGraph }), status: 404 },
  'GET /projects/:projectId/documents': { params: { projectId }, status: 404 },
  'GET /documents/:documentId': { params: { documentId }, status: 404 },
  'PUT /documents/:documentId': { params: { documentId }, body: () => ({ name: 'Mine now' }), status: 404 },
  'POST /documents/:documentId/publish': { params: { documentId }, body: () => ({ visibility: 'private' }), status: 404 },
  'GET /documents/:documentId/deployments': { params: { documentId }, status: 404 },
  'GET /api/webhook-triggers/by-document/:documentId': { params: { documentId }, status: 404 },
  'POST /api/webhook-triggers/by-document/:documentId/rotate-secret': { params: { documentId }, status: 404 },
  'POST /storage/:projectId/upload': { params: { projectId }, status: 404 },
  'POST /projects/:projectId/releases': { params: { projectId }, body: () => ({ alias: `sweep-${randomBytes(3).toString('hex')}` }), status: 404 },
  'GET /projects/:projectId/releases': { params: { projectId }, status: 404 },
  'GET /releases/:releaseId': { params: { releaseId: { foreign: (f) => [f.a.releaseId] } }, status: 404 },
  'POST /releases/:releaseId/versions': { params: { releaseId: { foreign: (f) => [f.a.releaseId] } }, body: () => ({ endpoints: [] }), status: 404 },
  'GET /projects/:projectId/graph/status': { params: { projectId }, status: 404 },
  'POST /projects/:projectId/graph/episodes': { params: { projectId }, body: () => ({ content: 'Mine now' }), status: 404 },
  'POST /projects/:projectId/graph/search': { params: { projectId }, body: () => ({ query: 'anything' }), status: 404 },
  'GET /projects/:projectId/graph/jobs/:jobId': { params: { projectId, jobId: { foreign: (f) => [f.a.graphJobId] } }, status: 404 },

  'GET /projects/:projectId/schedules/:id': { params: { projectId: scheduleProject, id: { foreign: (f) => [f.a.scheduleId] } }, status: 404 },
  'PUT /projects/:projectId/schedules/:id': { params: { projectId: scheduleProject, id: { foreign: (f) => [f.a.scheduleId] } }, body: () => ({ name: 'Mine now' }), status: 404 },
  'DELETE /projects/:projectId/schedules/:id': { params: { projectId: scheduleProject, id: { foreign: (f) => [f.a.scheduleId] } }, status: 404 },
  'POST /projects/:projectId/schedules/:id/trigger': { params: { projectId: scheduleProject, id: { foreign: (f) => [f.a.scheduleId] } }, status: 404 },
  'GET /projects/:projectId/schedules/:id/logs': { params: { projectId: scheduleProject, id: { foreign: (f) => [f.a.scheduleId] } }, status: 404 },

  'GET /hardware-sales/orders/:orderNo': { params: { orderNo }, status: 404 },
  'PATCH /hardware-sales/orders/:orderNo/address': { params: { orderNo }, body: () => testAddress({ receiverName: 'Mine Now' }), status: 404 },
  'POST /hardware-sales/orders/:orderNo/receipt': { params: { orderNo }, status: 404 },
  'POST /public/hardware-sales/orders/:orderNo/pay': { params: { orderNo }, creds: ['jwt', 'oauth'], body: () => ({}), status: 404 },
  'GET /hardware-sales/discount-codes/:code/orders': {
    params: { code: { foreign: (f) => [f.a.discountCode], random: () => `F${randomBytes(5).toString('hex').toUpperCase()}` } }, status: 404,
  },
  // Spec 4.2 rule 3: unknown address and wrong secret answer the same 404; team B calls with its own trigger's secret.
  'POST /api/webhook-triggers/:webhookId': { params: { webhookId: { foreign: (f) => [f.a.webhookId] } }, creds: ['webhookSecret'], body: () => ({}), status: 404 },
  'POST /api/connectors/connections/:connectionId/test': { params: { connectionId: { foreign: (f) => [f.a.connectionId] } }, status: 404 },
  'DELETE /api/connectors/connections/:connectionId': { params: { connectionId: { foreign: (f) => [f.a.connectionId] } }, status: 404 },
};

/** Team A (the owner of every object the sweep aims at) and team B (the caller), each with what the routes need. */
async function makeFixtures(stack: TestStack) {
  const make = credentialFactory(stack);
  const hw = hardwareFixtures(stack);
  await hw.relaxRateLimits();
  const operator = { kind: 'operator' } as const;
  // The graph routes answer 503 before anything else while the feature is off: turn it on.
  await upsertSiteSetting(stack.db, 'graph.config', { enabled: true, extractor: 'builtin' });
  stack.deps.settings.invalidate();

  async function tenant(label: string) {
    const { owner, team, apiKey } = await make.fundedTenant(1_000_000);
    const project = await createProject(stack.db, { teamId: team.id, name: `${label} apps` });
    const document = await createDocument(stack.db, operator, { projectId: project.id, name: `${label} app`, graph: exampleGraph });
    const deployment = await publishDocument(stack.db, operator, document.id, { visibility: 'private' });
    const jwt = await make.jwt(owner.id);
    // The document's webhook trigger (made on publish) with a secret, so calls reach the secret check.
    const rotated = await stack.app.inject({ method: 'POST', url: `/api/webhook-triggers/by-document/${document.id}/rotate-secret`, headers: { authorization: `Bearer ${jwt}` } });
    expect(rotated.statusCode, rotated.body).toBe(200);
    const { id: webhookId, secret: webhookSecret, path } = rotated.json() as { id: string; secret: string; path: string };
    expect(path).toMatch(new RegExp(`/api/webhook-triggers/${webhookId}$`));
    const oauthApp = await make.oauthToken(owner.id, ['orders:checkout', 'chat:completions', 'mobile:full', 'profile:read']);
    const oauth = oauthApp.token;
    return {
      owner, teamId: team.id, projectId: project.id, documentId: document.id, deploymentId: deployment.id, apiKey, jwt, oauth, webhookId, webhookSecret,
      ownOAuthAppId: oauthApp.appId, oauthClientId: oauthApp.clientId,
    };
  }
  const [a, b] = [await tenant('A'), await tenant('B')];
  const asA = { authorization: `Bearer ${a.jwt}` };
  const inject = async (method: 'POST' | 'PUT', url: string, payload: object, expected = 201) => {
    const res = await stack.app.inject({ method, url, headers: asA, payload });
    expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(expected);
    return res.json();
  };

  const publicDocument = await createDocument(stack.db, operator, { projectId: a.projectId, name: 'A public app', graph: exampleGraph });
  const publicDeployment = await publishDocument(stack.db, operator, publicDocument.id, { visibility: 'public' });
  const agent = (await inject('POST', `/teams/${a.teamId}/agents`, { name: 'A agent', permissions: ['GET /my'] })).agent;
  const binding = await inject('POST', `/teams/${a.teamId}/agents/${agent.id}/tokens`, {});
  const key = await make.apiKey(a.teamId, a.owner.id);
  const grantee = await make.team((await make.user('grantee')).id, 'Grantee');
  const crossTeam = (await inject('POST', `/teams/${a.teamId}/cross-team-bindings`, { documentId: a.documentId, granteeTeamId: grantee.id })).binding;
  const schedule = (await inject('POST', `/projects/${a.projectId}/schedules`, { name: 'A nightly', cron_expression: '0 3 * * *', deployment_id: a.deploymentId, enabled: false })).schedule
    ?? (await stack.db.selectFrom('schedules').select('id').where('project_id', '=', a.projectId).executeTakeFirstOrThrow());
  const release = (await inject('POST', `/projects/${a.projectId}/releases`, { alias: `sweep-a-${randomBytes(4).toString('hex')}` })).release;

  const runId = randomUUID();
  await stack.db.insertInto('runs').values({
    id: runId, deployment_id: a.deploymentId, document_id: a.documentId, project_id: a.projectId, team_id: a.teamId, trigger_source: 'api-key', inputs: '{}',
  }).execute();
  const graphJobId = randomUUID();
  await stack.db.insertInto('graph_jobs').values({ id: graphJobId, project_id: a.projectId, kind: 'ingest', input: JSON.stringify({ content: 'A' }), created_by: a.owner.id }).execute();
  const connectionId = randomUUID();
  await stack.db.insertInto('connector_connections').values({
    id: connectionId, user_id: a.owner.id, service: 'imap_mail', account_label: 'a@example.com', status: 'active',
    credentials_sealed: JSON.stringify({}), credential_mask: JSON.stringify({ username: 'a•••@example.com', password: '••••••' }),
  }).execute();
  const oauth = await make.oauthToken(a.owner.id, ['profile:read']);
  const billingOrder = await billingFixtures(stack).order({ provider: 'mock', teamId: a.teamId });

  // A hardware order of user A, paid, and the friend code derived from it.
  const product = await hw.sku({ tiers: [{ tierCode: 'std', isStandard: true, priceCents: 19_900, stock: 1_000 }] });
  const buyerA: Buyer = { userId: a.owner.id, phone: null, jwt: a.jwt, headers: asA };
  const platformCode = await hw.code();
  const ordered = await hw.post('orders', { sku: product.sku, tierCode: 'std', address: testAddress(), discountCode: platformCode.code }, { headers: buyerA.headers });
  expect(ordered.statusCode, ordered.body).toBe(200);
  const orderNo = ordered.json().data.orderNo as string;
  await stack.db.updateTable('hw_orders').set({ payment_status: 'paid', paid_at: new Date(), fulfillment_status: 'awaiting_stock' }).where('order_no', '=', orderNo).execute();
  const derived = await stack.app.inject({ method: 'POST', url: '/hardware-sales/discount-codes/derive', headers: asA, payload: { sourceOrderNo: orderNo, friendSharePercent: 50 } });
  expect(derived.statusCode, derived.body).toBeLessThan(300);
  const discountCode = (derived.json().data?.code ?? derived.json().code) as string;

  return {
    hw,
    a: {
      ...a, publicDocumentId: publicDocument.id, publicDeploymentId: publicDeployment.id, agentId: agent.id as string, agentBindingId: binding.bindingId as string, apiKeyId: key.id, crossTeamBindingId: crossTeam.id as string,
      scheduleId: schedule.id as string, releaseId: release.id as string, runId, graphJobId, connectionId, oauthAppId: oauth.appId,
      billingOrderId: billingOrder.orderId, orderNo, discountCode,
    },
    b,
  };
}

/** What no refused call may change: every table an id route writes. */
const WATCHED = [
  'agents', 'agent_bindings', 'api_keys', 'documents', 'deployments', 'runs', 'schedules', 'releases', 'release_versions', 'webhook_triggers',
  'cross_team_bindings', 'team_llm_providers', 'graph_jobs', 'connector_connections', 'oauth_apps', 'oauth_clients', 'oauth_tokens',
  'billing_orders', 'hw_orders', 'hw_discount_codes', 'projects', 'teams', 'team_members', 'storage_objects', 'workflow_starts',
] as const;

describe("another team's ids answer exactly like random ones, on every route with an id", () => {
  let stack: TestStack;
  let f: Fixtures;
  const routes: string[] = [];
  const accessOfRoute = new Map<string, AccessRuleName | undefined>();

  beforeAll(async () => {
    stack = await createTestStack();
    // The app's own route table, built by the same registerApp as production.
    const probe = Fastify({ logger: false });
    probe.addHook('onRoute', (route) => {
      for (const method of [route.method].flat()) {
        if (method !== 'HEAD' && /[:*]/.test(route.url)) {
          routes.push(`${method} ${route.url}`);
          accessOfRoute.set(`${method} ${route.url}`, (route.config as { access?: AccessRuleName } | undefined)?.access);
        }
      }
    });
    await registerApp(probe, stack.deps);
    await probe.ready();
    await probe.close();
    f = await makeFixtures(stack);
  }, 120_000);
  afterAll(async () => {
    if (!stack) return;
    await f?.hw.terminateOrderSagas();
    await stack.close();
  });

  it('every route with an id has a case or an exemption with its reason', () => {
    expect(routes.length).toBeGreaterThan(50);
    const missing = [...new Set(routes)].filter((route) => !(route in CASES) && !(route in EXEMPT));
    expect(missing, 'routes with an id but no case in test/access/id-sweep.test.ts').toEqual([]);
    const stale = [...Object.keys(CASES), ...Object.keys(EXEMPT)].filter((route) => !routes.includes(route));
    expect(stale, 'cases or exemptions for routes the app no longer has').toEqual([]);
    const both = Object.keys(CASES).filter((route) => route in EXEMPT);
    expect(both, 'routes both swept and exempt').toEqual([]);
  });

  const snapshot = async () => Object.fromEntries(await Promise.all(WATCHED.map(async (table) =>
    [table, await stack.db.selectFrom(table).selectAll().execute().then((rows) => JSON.stringify(rows.map((r) => JSON.stringify(r)).sort()))] as const)));

  it.each(Object.keys(CASES))('%s', async (route) => {
    const c = CASES[route]!;
    const [method, template] = route.split(' ') as [string, string];
    const access = accessOfRoute.get(route);
    const creds = c.creds ?? (access ? byAccess[access] : undefined) ?? [];
    expect(creds.length, `no credential for ${route}`).toBeGreaterThan(0);
    const before = await snapshot();
    let compared = 0;
    for (const [varied, spec] of Object.entries(c.params)) {
      if ('fixed' in spec) continue;
      const valueOf = (name: string, forVaried: string) => {
        if (name === varied) return forVaried;
        const other = c.params[name]!;
        if ('fixed' in other) return other.fixed(f);
        return other.own?.(f) ?? randomUUID();
      };
      const urlWith = (value: string) => template.replace(/:(\w+)/g, (_m, name: string) => encodeURIComponent(valueOf(name, value)));
      for (const cred of creds) {
        const headers = { authorization: `Bearer ${{ jwt: f.b.jwt, apiKey: f.b.apiKey, oauth: f.b.oauth, webhookSecret: f.b.webhookSecret }[cred]}` };
        const payload = c.body?.(f);
        const answer = async (value: string) => {
          const res = await stack.app.inject({ method: method as 'GET', url: urlWith(value), headers, ...(payload === undefined ? {} : { payload: payload as object }) });
          return { status: res.statusCode, body: res.body.split(value).join(':id'), type: res.headers['content-type'] };
        };
        const random = await answer((spec.random ?? randomUUID)());
        expect(random.status, `${route} with a random ${varied} as ${cred}: ${random.body}`).toBe(c.status);
        for (const foreign of spec.foreign(f)) {
          expect(await answer(foreign), `${route} with team A's ${varied} as team B's ${cred}`).toEqual(random);
          compared += 1;
        }
      }
    }
    expect(compared).toBeGreaterThan(0);
    expect(await snapshot(), `${route} changed something`).toEqual(before);
  });
});
