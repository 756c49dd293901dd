import { exampleGraph } from '../../shared/documents/example-graph.js';
import { createDocument } from '../../shared/documents/service.js';
import { publishDocument } from '../../shared/publishing/service.js';
import type { Graph } from '../../shared/documents/graph.js';
import { createProject } from '../../shared/identity/service.js';
import { createRelease, publishReleaseVersion } from '../../shared/releases/service.js';
import { credentialFactory } from '../harness/credentials.js';
import type { TestStack } from '../harness/stack.js';

const operator = { kind: 'operator' } as const;

/**
 * A funded team with one project holding a public and a private deployment of the CONTRACTS.md
 * example graph (`name` required, `n` default 1 → `{ greeting, n: n*2 }`), and the team's key.
 */
export async function releaseTenant(stack: TestStack, credits = 100_000) {
  const make = credentialFactory(stack);
  const tenant = await make.fundedTenant(credits);
  const project = await createProject(stack.db, { teamId: tenant.team.id, name: 'Released apps' });
  const publish = async (visibility: 'public' | 'private', graph: Graph = exampleGraph) => {
    const document = await createDocument(stack.db, operator, { projectId: project.id, name: `App ${visibility}`, graph });
    const deployment = await publishDocument(stack.db, operator, document.id, { visibility });
    return { documentId: document.id, deploymentId: deployment.id };
  };
  const [publicApp, privateApp] = [await publish('public'), await publish('private')];
  const releaseKey = await make.apiKey(tenant.team.id, tenant.owner.id);
  return { ...tenant, projectId: project.id, publicApp, privateApp, publish, releaseKey };
}

let aliasCounter = 0;
/** A release (operator-created) with one published version; unique alias per call. */
export async function releaseWith(stack: TestStack, input: {
  projectId: string; endpoints: unknown[]; config?: unknown; anonymousApiKeyId?: string; version?: string;
}) {
  const alias = `app-${process.pid}-${++aliasCounter}-${Math.random().toString(36).slice(2, 8)}`;
  const release = await createRelease(stack.db, operator, { projectId: input.projectId, alias, config: input.config, anonymousApiKeyId: input.anonymousApiKeyId });
  await publishReleaseVersion(stack.db, operator, release.id, { version: input.version, endpoints: input.endpoints });
  return { ...release, url: (version: string, path: string) => `/api/released-app/r/${alias}/${version}${path}` };
}

type Session = { blockId: string; output: unknown };
export const outputOf = (body: { sessions: Session[] }) => body.sessions.find((s) => s.blockId === 'o')?.output;

export const runCount = async (stack: TestStack) => Number((await stack.db.selectFrom('runs').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
