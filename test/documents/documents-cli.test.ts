import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../../shared/identity/service.js';
import { runCli } from '../harness/cli.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

const graph = {
  blocks: [
    { id: 'q', type: 'input', name: 'name', config: { valueType: 'string', required: true } },
    { id: 'o', type: 'output', name: 'result', config: { value: 'hello {{q}}' } },
  ],
  edges: [{ from: 'q', to: 'o' }],
};

// Each CLI call is a process (~1 s), so these few cover the command wiring; the API suite covers the rules.
describe('CLI: document create and document publish', () => {
  let stack: TestStack;
  let projectId: string;
  let dir: string;
  const counts = async () => ({
    documents: (await stack.db.selectFrom('documents').select('id').execute()).length,
    deployments: (await stack.db.selectFrom('deployments').select('id').execute()).length,
  });

  beforeAll(async () => {
    stack = await createTestStack();
    const make = credentialFactory(stack);
    const owner = await make.user('owner');
    const team = await make.team(owner.id);
    projectId = (await createProject(stack.db, { teamId: team.id, name: 'CLI apps' })).id;
    dir = await mkdtemp(path.join(os.tmpdir(), 'wfapp-graphs-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await stack?.close();
  });

  it('creates a document from a graph file and publishes 1.0, then an explicit public 2.0', async () => {
    const file = path.join(dir, 'greeter.json');
    await writeFile(file, JSON.stringify(graph));
    const created = await runCli(['document', 'create', '--project', projectId, '--name', 'Greeter', '--graph', file], stack.env);
    expect(created.code, created.stderr).toBe(0);
    const documentId = created.json!.id as string;
    expect(Object.keys(created.json!)).toEqual(['id']);
    const row = await stack.db.selectFrom('documents').selectAll().where('id', '=', documentId).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ project_id: projectId, name: 'Greeter', graph, created_by: null });

    const first = await runCli(['document', 'publish', '--document', documentId], stack.env);
    expect(first.code, first.stderr).toBe(0);
    expect(first.json).toEqual({ deploymentId: expect.any(String), version: '1.0' });
    const second = await runCli(['document', 'publish', '--document', documentId, '--version', '2.0', '--visibility', 'public'], stack.env);
    expect(second.json).toEqual({ deploymentId: expect.any(String), version: '2.0' });

    const deployments = await stack.db.selectFrom('deployments').selectAll().where('document_id', '=', documentId).orderBy('version_major').execute();
    expect(deployments.map((d) => [d.id, `${d.version_major}.${d.version_minor}`, d.visibility, d.published_by])).toEqual([
      [first.json!.deploymentId, '1.0', 'private', null], [second.json!.deploymentId, '2.0', 'public', null],
    ]);
    expect(deployments[0]!.api_schema).toEqual({ inputs: [{ blockId: 'q', name: 'name', valueType: 'string', required: true }] });
  });

  it('a missing graph file is a usage error naming --graph, and nothing is written', async () => {
    const before = await counts();
    const res = await runCli(['document', 'create', '--project', projectId, '--name', 'X', '--graph', path.join(dir, 'nope.json')], stack.env);
    expect(res.code).toBe(2);
    expect(res.error).toMatchObject({ error: 'invalid_flag', message: expect.stringContaining('--graph') });
    expect(await counts()).toEqual(before);
  });

  it('an invalid graph is refused with the offending block ids, and nothing is written', async () => {
    const file = path.join(dir, 'cycle.json');
    await writeFile(file, JSON.stringify({
      blocks: [{ id: 'a', type: 'transform', config: { expression: '$b' } }, { id: 'b', type: 'transform', config: { expression: '$a' } }],
      edges: [{ from: 'a', to: 'b' }, { from: 'b', to: 'a' }],
    }));
    const before = await counts();
    const res = await runCli(['document', 'create', '--project', projectId, '--name', 'X', '--graph', file], stack.env);
    expect(res.code).toBe(1);
    expect(res.error).toMatchObject({ error: 'invalid_graph', message: expect.stringMatching(/a: cycle: a → b → a/) });
    expect(await counts()).toEqual(before);
  });
});
