import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accessMatrix, type AccessRuleName } from '../../shared/credentials/access-matrix.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// Spec §5.3 × every credential kind, through the real auth plugin with real credentials.
// Expected outcomes are written out from the spec here, not derived from the code's table.
type Caller = 'jwt' | 'api-key' | 'oauth-no-scope' | 'oauth-all-scopes' | 'agent-no-grant' | 'agent-granted' | 'schedule';
const callers: Caller[] = ['jwt', 'api-key', 'oauth-no-scope', 'oauth-all-scopes', 'agent-no-grant', 'agent-granted', 'schedule'];

const OK = 200;
const jwtOnly = [403, 'This endpoint only accepts JWT authentication'] as const;
const jwtOrOAuth = [403, 'This endpoint only accepts JWT or OAuth authentication'] as const;
const scope = [403, 'insufficient_scope'] as const;
const unauthorized = [401, 'Unauthorized'] as const;
type Outcome = typeof OK | readonly [number, string | RegExp];

const expected: Record<AccessRuleName, Record<Caller, Outcome>> = {
  currentUser: {
    jwt: OK, 'api-key': OK, 'oauth-no-scope': [403, 'This endpoint does not accept OAuth tokens'], 'oauth-all-scopes': [403, 'This endpoint does not accept OAuth tokens'],
    'agent-no-grant': [403, /^Permission denied: /], 'agent-granted': OK, schedule: OK,
  },
  defaultProject: {
    jwt: OK, 'api-key': jwtOrOAuth, 'oauth-no-scope': scope, 'oauth-all-scopes': OK, 'agent-no-grant': jwtOrOAuth, 'agent-granted': jwtOrOAuth, schedule: jwtOrOAuth,
  },
  myCredentials: {
    jwt: OK, 'api-key': jwtOnly, 'oauth-no-scope': scope, 'oauth-all-scopes': jwtOnly, 'agent-no-grant': jwtOnly, 'agent-granted': jwtOnly, schedule: jwtOnly,
  },
  oauthUserinfo: {
    jwt: [403, 'This endpoint only accepts OAuth authentication'], 'api-key': [403, 'This endpoint only accepts OAuth authentication'],
    'oauth-no-scope': scope, 'oauth-all-scopes': OK,
    'agent-no-grant': [403, 'This endpoint only accepts OAuth authentication'], 'agent-granted': [403, 'This endpoint only accepts OAuth authentication'],
    schedule: [403, 'This endpoint only accepts OAuth authentication'],
  },
  teamAdmin: {
    jwt: OK, 'api-key': jwtOnly, 'oauth-no-scope': jwtOnly, 'oauth-all-scopes': jwtOnly, 'agent-no-grant': jwtOnly, 'agent-granted': jwtOnly, schedule: jwtOnly,
  },
  combined: Object.fromEntries(callers.map((c) => [c, c === 'jwt' || c === 'api-key' ? OK : [403, 'This endpoint only accepts JWT or API key authentication']])) as Record<Caller, Outcome>,
  runsList: {
    jwt: OK, 'api-key': jwtOnly, 'oauth-no-scope': jwtOnly, 'oauth-all-scopes': jwtOnly, 'agent-no-grant': jwtOnly, 'agent-granted': jwtOnly, schedule: jwtOnly,
  },
  hardwareSales: {
    jwt: OK, 'api-key': jwtOrOAuth, 'oauth-no-scope': scope, 'oauth-all-scopes': OK, 'agent-no-grant': jwtOrOAuth, 'agent-granted': jwtOrOAuth, schedule: jwtOrOAuth,
  },
  deploymentRun: {
    jwt: unauthorized, 'api-key': OK, 'oauth-no-scope': scope, 'oauth-all-scopes': OK, 'agent-no-grant': unauthorized, 'agent-granted': unauthorized, schedule: OK,
  },
  crossTeam: {
    jwt: unauthorized, 'api-key': OK, 'oauth-no-scope': scope, 'oauth-all-scopes': OK, 'agent-no-grant': unauthorized, 'agent-granted': unauthorized, schedule: OK,
  },
  documentRun: Object.fromEntries(callers.map((c) => [c, c === 'api-key' ? OK : [401, 'Unauthorized: Document ID route only supports API key authentication']])) as Record<Caller, Outcome>,
  // Rows without a spec'd 401: a valid credential of another kind is 403 (spec §5.4).
  v1: Object.fromEntries(callers.map((c) => [c, c === 'api-key' ? OK : [403, 'This endpoint only accepts API key authentication']])) as Record<Caller, Outcome>,
  runFollowUp: {
    jwt: OK, 'api-key': OK, 'oauth-no-scope': OK, 'oauth-all-scopes': OK,
    'agent-no-grant': [403, 'This endpoint does not accept agent tokens'], 'agent-granted': [403, 'This endpoint does not accept agent tokens'], schedule: OK,
  },
  releaseGateway: {
    jwt: unauthorized, 'api-key': OK, 'oauth-no-scope': scope, 'oauth-all-scopes': OK, 'agent-no-grant': OK, 'agent-granted': OK, schedule: unauthorized,
  },
  // §7.7's 401 is "not logged in": a valid API key (or any other valid credential) is logged in, so 403.
  connectors: Object.fromEntries(callers.map((c) => [c, c === 'jwt' ? OK : jwtOnly])) as Record<Caller, Outcome>,
};

describe('§5.3: which endpoint group accepts which credential', () => {
  let stack: TestStack;
  const tokens = {} as Record<Caller, string>;

  beforeAll(async () => {
    stack = await createTestStack();
    for (const rule of Object.keys(accessMatrix) as AccessRuleName[]) {
      stack.app.get(`/probe/${rule}`, { config: { access: rule } }, async (request) => ({ kind: request.principal?.kind }));
    }
    const make = credentialFactory(stack);
    const owner = await make.user('owner');
    const team = await make.team(owner.id);
    tokens.jwt = await make.jwt(owner.id);
    tokens['api-key'] = (await make.apiKey(team.id, owner.id)).token;
    tokens['oauth-no-scope'] = (await make.oauthToken(owner.id, [])).token;
    tokens['oauth-all-scopes'] = (await make.oauthToken(owner.id, ['profile:read', 'orders:checkout', 'mobile:full', 'chat:completions'])).token;
    tokens['agent-no-grant'] = (await make.agentToken(team.id, owner.id, [])).token;
    tokens['agent-granted'] = (await make.agentToken(team.id, owner.id, ['* /**'])).token;
    tokens.schedule = await make.scheduleToken(team.id);
  });
  afterAll(() => stack?.close());

  it('the spec table covers every row of the code table', () => {
    expect(Object.keys(expected).sort()).toEqual(Object.keys(accessMatrix).sort());
  });

  for (const rule of Object.keys(expected) as AccessRuleName[]) {
    describe(rule, () => {
      it.each(callers)('%s', async (caller) => {
        const res = await stack.app.inject({ method: 'GET', url: `/probe/${rule}`, headers: { authorization: `Bearer ${tokens[caller]}` } });
        const outcome = expected[rule][caller];
        if (outcome === OK) {
          expect(res.statusCode, res.body).toBe(200);
          expect(res.json().kind).toBe(caller.split('-')[0] === 'api' ? 'api-key' : caller.split('-')[0]);
        } else {
          expect(res.statusCode, res.body).toBe(outcome[0]);
          const error = res.json().error as string;
          if (typeof outcome[1] === 'string') expect(error).toBe(outcome[1]);
          else expect(error).toMatch(outcome[1]);
        }
      });
    });
  }

  it('X-API-Key is read only where the spec allows it', async () => {
    const viaHeader = (rule: AccessRuleName) => stack.app.inject({ method: 'GET', url: `/probe/${rule}`, headers: { 'x-api-key': tokens['api-key'] } });
    expect((await viaHeader('combined')).statusCode).toBe(200);
    const refused = await viaHeader('myCredentials');
    expect(refused.statusCode).toBe(401);
    expect(refused.json().error).toBe('Missing or invalid authorization header');
  });

  it('no credential, or a header that is not a bearer token, is 401 with the group message', async () => {
    for (const headers of [{}, { authorization: '' }, { authorization: `Basic ${tokens.jwt}` }, { authorization: 'Bearer' }]) {
      const res = await stack.app.inject({ method: 'GET', url: '/probe/currentUser', headers });
      expect(res.statusCode).toBe(401);
      expect(res.json().error).toBe('Missing or invalid authorization header');
    }
    const run = await stack.app.inject({ method: 'GET', url: '/probe/documentRun' });
    expect([run.statusCode, run.json().error]).toEqual([401, 'Unauthorized']);
  });
});
