import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  requireDocumentAccess, requireProject, requireTeamRole, teamLevel, type AccessCaller,
} from '../../shared/access/service.js';
import { requireVisibleRun } from '../../shared/app-runs/run-access.js';
import type { Graph } from '../../shared/documents/graph-schema.js';
import { addTeamMember } from '../../shared/identity/service.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

const graph = { blocks: [{ id: 'o', type: 'output', name: 'out', config: { value: 'x' } }], edges: [] } as unknown as Graph;

/** What a refused call answers (status, error, message), or 'allowed' with its value. */
async function outcome<T>(call: Promise<T>): Promise<{ allowed: T } | { status: number; error: string; message: string }> {
  try {
    return { allowed: await call };
  } catch (error) {
    const { status, error: code, message } = error as { status: number; error: string; message: string };
    return { status, error: code, message };
  }
}

const projectMissing = { status: 404, error: 'Project not found', message: 'Project not found' };
const documentMissing = { status: 404, error: 'Document not found', message: 'Document not found' };
const runMissing = { status: 404, error: 'Run not found', message: 'Run not found' };
const teamMissing = { status: 404, error: 'Team not found', message: 'Team not found' };

describe('the access module (shared/access): one rule for teams, projects, documents and runs', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  const ids = {} as Record<'owner' | 'admin' | 'member' | 'removed' | 'stranger' | 'team' | 'otherTeam' | 'project' | 'document' | 'run', string>;
  const jwt = (userId: string) => ({ kind: 'jwt' as const, userId });
  let otherKey: AccessCaller & { kind: 'api-key' };
  let keyOfRemoved: AccessCaller & { kind: 'api-key' };

  /** A team with a project, a document (published) and a run started by `runUserId`. */
  async function tenant(ownerId: string, runUserId: string | null) {
    const team = await make.team(ownerId, 'Access');
    const app = await publishDirect(stack.db, graph, { teamId: team.id, publishedBy: ownerId });
    const { project_id: projectId } = await stack.db.selectFrom('documents').select('project_id').where('id', '=', app.documentId).executeTakeFirstOrThrow();
    const runId = randomUUID();
    await stack.db.insertInto('runs').values({
      id: runId, deployment_id: app.deploymentId, document_id: app.documentId, team_id: team.id, trigger_source: 'oauth',
      user_id: runUserId, status: 'running', inputs: JSON.stringify({}),
    }).execute();
    return { teamId: team.id, projectId, documentId: app.documentId, runId };
  }

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
    for (const label of ['owner', 'admin', 'member', 'removed', 'stranger'] as const) ids[label] = (await make.user(label)).id;
    const own = await tenant(ids.owner, ids.member);
    Object.assign(ids, { team: own.teamId, project: own.projectId, document: own.documentId, run: own.runId });
    ids.otherTeam = (await make.team(ids.stranger, 'Other')).id;
    await addTeamMember(stack.db, { teamId: ids.team, userId: ids.admin, role: 'admin' });
    await addTeamMember(stack.db, { teamId: ids.team, userId: ids.member, role: 'member' });
    await addTeamMember(stack.db, { teamId: ids.team, userId: ids.removed, role: 'member' });
    await make.apiKey(ids.team, ids.removed);
    await stack.db.deleteFrom('team_members').where('team_id', '=', ids.team).where('user_id', '=', ids.removed).execute();
    otherKey = { kind: 'api-key', userId: ids.stranger, teamId: ids.otherTeam };
    keyOfRemoved = { kind: 'api-key', userId: ids.removed, teamId: ids.team };
  });
  afterAll(() => stack?.close());

  it('team level: none for another team\'s key and a removed member, member, admin for admins and the owner', async () => {
    expect(await teamLevel(stack.db, otherKey, ids.team)).toBe('none');
    // A key acts with its creator's role in its own team: the other team's owner made this one.
    expect(await teamLevel(stack.db, otherKey, ids.otherTeam)).toBe('admin');
    expect(await teamLevel(stack.db, jwt(ids.member), ids.team)).toBe('member');
    expect(await teamLevel(stack.db, jwt(ids.admin), ids.team)).toBe('admin');
    expect(await teamLevel(stack.db, jwt(ids.owner), ids.team)).toBe('admin');
    expect(await teamLevel(stack.db, jwt(ids.removed), ids.team)).toBe('none');
    expect(await teamLevel(stack.db, jwt(ids.stranger), ids.team)).toBe('none');
    // A key of the team keeps reading and editing after its creator left it.
    expect(await teamLevel(stack.db, keyOfRemoved, ids.team)).toBe('member');
    expect(await teamLevel(stack.db, { kind: 'operator' }, ids.team)).toBe('admin');
    expect(await teamLevel(stack.db, jwt(ids.owner), 'not-a-uuid')).toBe('none');
  });

  it('team role: 404 for non-members (as for a missing team), 403 for a member without the role', async () => {
    expect(await outcome(requireTeamRole(stack.db, ids.team, ids.owner, ['owner'], 'create API keys'))).toEqual({ allowed: 'owner' });
    expect(await outcome(requireTeamRole(stack.db, ids.team, ids.admin, ['owner', 'admin'], 'manage agents'))).toEqual({ allowed: 'admin' });
    expect(await outcome(requireTeamRole(stack.db, ids.team, ids.member, ['owner', 'admin'], 'manage agents')))
      .toEqual({ status: 403, error: 'Forbidden', message: 'Only the team owner or admin can manage agents' });
    expect(await outcome(requireTeamRole(stack.db, ids.team, ids.removed, ['owner', 'admin', 'member'], 'read'))).toEqual(teamMissing);
    expect(await outcome(requireTeamRole(stack.db, ids.team, ids.stranger, ['owner', 'admin', 'member'], 'read'))).toEqual(teamMissing);
    expect(await outcome(requireTeamRole(stack.db, randomUUID(), ids.owner, ['owner'], 'read'))).toEqual(teamMissing);
  });

  it('project: the caller\'s access, or 404 exactly like a missing project', async () => {
    const project = (access: string) => ({ allowed: { id: ids.project, team_id: ids.team, access } });
    expect(await outcome(requireProject(stack.db, otherKey, ids.project))).toEqual(projectMissing);
    expect(await outcome(requireProject(stack.db, jwt(ids.member), ids.project))).toEqual(project('member'));
    expect(await outcome(requireProject(stack.db, jwt(ids.admin), ids.project))).toEqual(project('admin'));
    expect(await outcome(requireProject(stack.db, jwt(ids.owner), ids.project))).toEqual(project('admin'));
    expect(await outcome(requireProject(stack.db, keyOfRemoved, ids.project))).toEqual(project('member'));
    expect(await outcome(requireProject(stack.db, jwt(ids.removed), ids.project))).toEqual(projectMissing);
    expect(await outcome(requireProject(stack.db, jwt(ids.owner), randomUUID()))).toEqual(projectMissing);
    expect(await outcome(requireProject(stack.db, jwt(ids.owner), 'not-a-uuid'))).toEqual(projectMissing);
  });

  it('document: the caller\'s access, or 404 exactly like a missing document', async () => {
    const document = (access: string) => ({ allowed: { team_id: ids.team, access } });
    expect(await outcome(requireDocumentAccess(stack.db, otherKey, ids.document))).toEqual(documentMissing);
    expect(await outcome(requireDocumentAccess(stack.db, jwt(ids.member), ids.document))).toEqual(document('member'));
    expect(await outcome(requireDocumentAccess(stack.db, jwt(ids.admin), ids.document))).toEqual(document('admin'));
    expect(await outcome(requireDocumentAccess(stack.db, jwt(ids.owner), ids.document))).toEqual(document('admin'));
    expect(await outcome(requireDocumentAccess(stack.db, keyOfRemoved, ids.document))).toEqual(document('member'));
    expect(await outcome(requireDocumentAccess(stack.db, jwt(ids.removed), ids.document))).toEqual(documentMissing);
    expect(await outcome(requireDocumentAccess(stack.db, jwt(ids.owner), randomUUID()))).toEqual(documentMissing);
  });

  it('run: its team\'s keys and members and the OAuth user who started it follow it; others get 404 like a missing run', async () => {
    const visible = { allowed: { id: ids.run, team_id: ids.team, user_id: ids.member, status: 'running' } };
    expect(await outcome(requireVisibleRun(stack.db, ids.run, otherKey))).toEqual(runMissing);
    expect(await outcome(requireVisibleRun(stack.db, ids.run, keyOfRemoved))).toEqual(visible);
    expect(await outcome(requireVisibleRun(stack.db, ids.run, { kind: 'schedule', teamId: ids.team }))).toEqual(visible);
    expect(await outcome(requireVisibleRun(stack.db, ids.run, { kind: 'schedule', teamId: ids.otherTeam }))).toEqual(runMissing);
    expect(await outcome(requireVisibleRun(stack.db, ids.run, jwt(ids.member)))).toEqual(visible);
    expect(await outcome(requireVisibleRun(stack.db, ids.run, jwt(ids.admin)))).toEqual(visible);
    expect(await outcome(requireVisibleRun(stack.db, ids.run, jwt(ids.owner)))).toEqual(visible);
    expect(await outcome(requireVisibleRun(stack.db, ids.run, jwt(ids.removed)))).toEqual(runMissing);
    expect(await outcome(requireVisibleRun(stack.db, ids.run, jwt(ids.stranger)))).toEqual(runMissing);
    expect(await outcome(requireVisibleRun(stack.db, ids.run, { kind: 'oauth', userId: ids.member }))).toEqual(visible);
    expect(await outcome(requireVisibleRun(stack.db, ids.run, { kind: 'oauth', userId: ids.owner }))).toEqual(runMissing);
    expect(await outcome(requireVisibleRun(stack.db, ids.run, { kind: 'agent' }))).toEqual(runMissing);
    expect(await outcome(requireVisibleRun(stack.db, randomUUID(), jwt(ids.owner)))).toEqual(runMissing);
  });

  it('a deleted project, or a deleted document, answers exactly like a missing one, even to the owner', async () => {
    const gone = await tenant(ids.owner, null);
    expect(await outcome(requireProject(stack.db, jwt(ids.owner), gone.projectId))).toEqual({ allowed: { id: gone.projectId, team_id: gone.teamId, access: 'admin' } });
    expect(await outcome(requireDocumentAccess(stack.db, jwt(ids.owner), gone.documentId))).toEqual({ allowed: { team_id: gone.teamId, access: 'admin' } });

    await stack.db.updateTable('documents').set({ deleted_at: new Date() }).where('id', '=', gone.documentId).execute();
    expect(await outcome(requireDocumentAccess(stack.db, jwt(ids.owner), gone.documentId))).toEqual(documentMissing);
    expect(await outcome(requireDocumentAccess(stack.db, { kind: 'operator' }, gone.documentId))).toEqual(documentMissing);

    await stack.db.updateTable('projects').set({ deleted_at: new Date() }).where('id', '=', gone.projectId).execute();
    expect(await outcome(requireProject(stack.db, jwt(ids.owner), gone.projectId))).toEqual(projectMissing);
    expect(await outcome(requireProject(stack.db, { kind: 'api-key', userId: ids.owner, teamId: gone.teamId }, gone.projectId))).toEqual(projectMissing);
    expect(await outcome(requireProject(stack.db, { kind: 'operator' }, gone.projectId))).toEqual(projectMissing);
  });

  it('a deleted team: nobody has access to it, its projects, its documents or (as a member) its runs', async () => {
    const gone = await tenant(ids.owner, null);
    await addTeamMember(stack.db, { teamId: gone.teamId, userId: ids.member, role: 'member' });
    const key: AccessCaller = { kind: 'api-key', userId: ids.owner, teamId: gone.teamId };
    expect(await teamLevel(stack.db, jwt(ids.member), gone.teamId)).toBe('member');
    expect(await outcome(requireVisibleRun(stack.db, gone.runId, jwt(ids.member)))).toMatchObject({ allowed: { id: gone.runId } });

    await stack.db.updateTable('teams').set({ deleted_at: new Date() }).where('id', '=', gone.teamId).execute();
    expect(await teamLevel(stack.db, jwt(ids.owner), gone.teamId)).toBe('none');
    expect(await teamLevel(stack.db, jwt(ids.member), gone.teamId)).toBe('none');
    expect(await teamLevel(stack.db, key, gone.teamId)).toBe('none');
    expect(await outcome(requireTeamRole(stack.db, gone.teamId, ids.owner, ['owner'], 'read'))).toEqual(teamMissing);
    expect(await outcome(requireProject(stack.db, jwt(ids.owner), gone.projectId))).toEqual(projectMissing);
    expect(await outcome(requireProject(stack.db, key, gone.projectId))).toEqual(projectMissing);
    expect(await outcome(requireDocumentAccess(stack.db, jwt(ids.owner), gone.documentId))).toEqual(documentMissing);
    expect(await outcome(requireDocumentAccess(stack.db, key, gone.documentId))).toEqual(documentMissing);
    expect(await outcome(requireVisibleRun(stack.db, gone.runId, jwt(ids.member)))).toEqual(runMissing);
    expect(await outcome(requireVisibleRun(stack.db, gone.runId, jwt(ids.owner)))).toEqual(runMissing);
  });
});
