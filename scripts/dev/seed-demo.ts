import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Database } from '../../shared/db/client.js';
import { grantCredits } from '../../shared/billing/service.js';
import { openSubscription } from '../../shared/billing/subscriptions.js';
import { createApiKey } from '../../shared/credentials/api-keys.js';
import { findLiveApiKeyByHash } from '../../shared/credentials/repository.js';
import { sha256Hex } from '../../shared/crypto.js';
import { createDocument } from '../../shared/documents/service.js';
import { publishDocument } from '../../shared/publishing/service.js';
import { exampleGraph } from '../../shared/documents/example-graph.js';
import type { Graph } from '../../shared/documents/graph.js';
import { findUserByEmail } from '../../shared/identity/repository.js';
import { createProject, createTeam, createUser } from '../../shared/identity/service.js';

export const DEMO_EMAIL = 'demo@example.com';
const DEMO_TEAM = 'Demo Team';
const DEMO_CREDITS_MILLI = 1_000_000;

export interface DemoTenant {
  userId: string; teamId: string; projectId: string; apiKey: string; documentId: string; deploymentId: string;
  /** The app that drafts a reply and waits for a person to approve it (docs/long-runs.md). */
  approvalDeploymentId: string;
}

/** The demo app that waits: its approval block is `approve`, so the decision goes to `/api/runs/<runId>/approvals/approve`. */
export const approvalDemoGraph: Graph = {
  blocks: [
    { id: 'draft', type: 'input', name: 'draft', config: { valueType: 'string', required: true } },
    { id: 'approve', type: 'approval', name: 'approve', config: { prompt: 'Send this reply? {{draft}}', timeoutSeconds: 86_400 } },
    { id: 'approved', type: 'condition', name: 'approved', config: { expression: '$approve.approved' } },
    { id: 'sent', type: 'output', name: 'sent', config: { value: 'Sent: {{draft}}' } },
    { id: 'held', type: 'output', name: 'held', config: { value: 'Held back' } },
  ],
  edges: [
    { from: 'draft', to: 'approve' }, { from: 'approve', to: 'approved' },
    { from: 'approved', to: 'sent', when: true }, { from: 'approved', to: 'held', when: false },
  ],
};

/**
 * The demo tenant of `npm start`: user, team with credits, project, API key. Idempotent, so every
 * start finds the same tenant. The demo key's plaintext is kept in `.data/` (development only)
 * because the database holds just its hash; a revoked key is replaced by a new one.
 */
export async function seedDemoTenant(db: Database, dataDir: string): Promise<DemoTenant> {
  const user = (await findUserByEmail(db, DEMO_EMAIL)) ?? (await createUser(db, { email: DEMO_EMAIL, name: 'Demo User' }));
  let team = await db.selectFrom('teams').select('id').where('owner_id', '=', user.id).where('name', '=', DEMO_TEAM)
    .where('deleted_at', 'is', null).executeTakeFirst();
  if (!team) {
    team = await createTeam(db, { ownerId: user.id, name: DEMO_TEAM, plan: 'pro' }, openSubscription);
    await grantCredits(db, { teamId: team.id, amountMilli: DEMO_CREDITS_MILLI, reason: 'demo_seed', reference: 'demo-seed' });
  }
  const project = (await db.selectFrom('projects').select('id').where('team_id', '=', team.id).where('slug', '=', 'demo-project').executeTakeFirst())
    ?? (await createProject(db, { teamId: team.id, name: 'Demo Project', createdBy: user.id }));

  const keyFile = path.join(dataDir, 'demo-api-key');
  const saved = existsSync(keyFile) ? (await readFile(keyFile, 'utf8')).trim() : '';
  const savedRow = saved ? await findLiveApiKeyByHash(db, sha256Hex(saved)) : undefined;
  let apiKey = saved;
  if (!savedRow || savedRow.team_id !== team.id) {
    apiKey = (await createApiKey(db, { teamId: team.id, createdBy: user.id, name: 'Demo key' })).token;
    await writeFile(keyFile, apiKey, { mode: 0o600 });
  }
  const approval = await seedDemoApp(db, project.id, 'Reply approval', approvalDemoGraph);
  return { userId: user.id, teamId: team.id, projectId: project.id, apiKey, ...(await seedDemoApp(db, project.id, 'Hello app', exampleGraph)), approvalDeploymentId: approval.deploymentId };
}

/** A demo app (the CONTRACTS.md example, the approval app), published once. */
async function seedDemoApp(db: Database, projectId: string, name: string, graph: Graph): Promise<{ documentId: string; deploymentId: string }> {
  const existing = await db.selectFrom('deployments as d').innerJoin('documents as doc', 'doc.id', 'd.document_id')
    .select(['d.id', 'd.document_id']).where('doc.project_id', '=', projectId).where('doc.name', '=', name).where('d.deleted_at', 'is', null)
    .orderBy('d.created_at', 'desc').executeTakeFirst();
  if (existing) return { documentId: existing.document_id, deploymentId: existing.id };
  const operator = { kind: 'operator' } as const;
  const document = await createDocument(db, operator, { projectId, name, graph });
  return { documentId: document.id, deploymentId: (await publishDocument(db, operator, document.id, {})).id };
}
