import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Connection, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import { TypedSearchAttributes, type SearchAttributePair } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import type { Graph } from '../../shared/documents/graph.js';
import { grantCredits } from '../../shared/billing/service.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { runSummary, scheduledRunSummary, searchAttributeDefinitions, searchAttributeKeys, workflowSearchAttributes } from '../../temporal/search-attributes.js';
import { taskQueueName } from '../../temporal/task-queues.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';
import { deleteTemporalSchedules, describeTemporalSchedule } from '../schedules/helpers.js';

const graph: Graph = {
  blocks: [{ id: 'o', type: 'output', name: 'answer', config: { value: 'done' } }],
  edges: [],
};

const typed = (value: SearchAttributePair[] | TypedSearchAttributes | undefined) =>
  value instanceof TypedSearchAttributes ? value : new TypedSearchAttributes(value ?? []);

async function listAll(client: Client, query: string): Promise<WorkflowExecutionInfo[]> {
  const found: WorkflowExecutionInfo[] = [];
  for await (const execution of client.workflow.list({ query })) found.push(execution);
  return found;
}

describe('search attributes operators filter executions by', () => {
  it('builds Keyword pairs from the fields it is given, leaving out null, undefined and empty ones', () => {
    const pairs = workflowSearchAttributes({ teamId: 't1', projectId: null, deploymentId: 'd1', documentId: undefined, triggerSource: 'api' });
    expect(pairs.map((p) => [p.key.name, p.key.type, p.value])).toEqual([
      ['WfTeamId', 'KEYWORD', 't1'], ['WfDeploymentId', 'KEYWORD', 'd1'], ['WfTriggerSource', 'KEYWORD', 'api'],
    ]);
    expect(workflowSearchAttributes({ teamId: 't1', projectId: '' }).map((p) => p.key.name)).toEqual(['WfTeamId']);
    expect(searchAttributeDefinitions).toEqual(['WfTeamId', 'WfProjectId', 'WfDeploymentId', 'WfDocumentId', 'WfTriggerSource', 'WfWaiting'].map((name) => ({ name, type: 'KEYWORD' })));
  });

  it('gives one-line summaries', () => {
    expect(runSummary('My App', '1.2')).toBe('Run of "My App" v1.2');
    expect(runSummary('My\n  App', 'v3.0')).toBe('Run of "My App" v3.0');
    expect(runSummary('x'.repeat(200), '1.0').length).toBeLessThan(100);
    expect(scheduledRunSummary('nightly')).toBe('Scheduled run of "nightly"');
  });

  it('docker-compose registers every one of them before the API and worker start', () => {
    const compose = parse(readFileSync('docker-compose.yml', 'utf8'), { merge: true }) as {
      services: Record<string, { image?: string; command?: string[]; depends_on?: Record<string, { condition: string }> | string[] }>;
    };
    const registrar = compose.services['temporal-namespace']!;
    expect(registrar.image).toMatch(/^temporalio\/admin-tools:/);
    const script = registrar.command!.join(' ');
    for (const { name } of searchAttributeDefinitions) expect(script).toMatch(new RegExp(`--name ${name} --type Keyword\\b`));
    // It waits for the server itself (`temporal operator cluster health` in a loop): the server image has no health check.
    expect(registrar.depends_on).toEqual(['temporal']);
    expect(script).toContain('temporal operator cluster health --address temporal:7233');
    for (const name of ['api', 'worker']) {
      expect(compose.services[name]!.depends_on).toMatchObject({ 'temporal-namespace': { condition: 'service_completed_successfully' } });
    }
  });
});

describe('search attributes on the real Temporal dev server', () => {
  let stack: TestStack;
  let client: Client;
  let ownerJwt: string;
  let ownerId: string;
  let teamId: string;

  beforeAll(async () => {
    stack = await createTestStack();
    client = stack.deps.temporal.client;
    await stack.startWorker();
    const make = credentialFactory(stack);
    const owner = await make.user('owner');
    ownerId = owner.id;
    teamId = (await make.team(owner.id)).id;
    await grantCredits(stack.db, { teamId, amountMilli: 100_000 });
    ownerJwt = await make.jwt(owner.id);
    await upsertSiteSetting(stack.db, 'team.quota_limits.schedules', { free: { maxEnabled: 100, minIntervalSeconds: 300 } });
    stack.deps.settings.invalidate('team.quota_limits.schedules');
  });
  afterAll(async () => {
    if (!stack) return;
    await deleteTemporalSchedules(stack);
    await stack.close();
  });

  it('the dev server the harness (and npm start) runs has every attribute registered as Keyword', async () => {
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace: stack.config.TEMPORAL_NAMESPACE })
      .finally(() => connection.close());
    for (const { name } of searchAttributeDefinitions) {
      expect(customAttributes?.[name], name).toBe(2); // INDEXED_VALUE_TYPE_KEYWORD
    }
  });

  it('a workflow started with them is listed by WfTeamId (and by the other fields), and not for another team', async () => {
    const probeTeam = randomUUID();
    const projectId = randomUUID();
    const probeId = randomUUID();
    const workflowId = workflowIds.platformProbe(probeId);
    await client.workflow.execute('platformProbeWorkflow', {
      taskQueue: taskQueueName('platform', stack.config.TEMPORAL_TASK_QUEUE_SUFFIX),
      workflowId,
      args: [{ probeId, note: 'search attributes' }],
      typedSearchAttributes: workflowSearchAttributes({ teamId: probeTeam, projectId, deploymentId: null, triggerSource: 'doctor' }),
      staticSummary: runSummary('Probe', '1.0'),
    });

    const listed = await until(async () => {
      const found = await listAll(client, `WfTeamId = '${probeTeam}'`);
      return found.length > 0 && found;
    }, 15_000, 'the probe to be listed by WfTeamId');
    expect(listed.map((e) => e.workflowId)).toEqual([workflowId]);
    expect(listed[0]!.typedSearchAttributes.get(searchAttributeKeys.projectId)).toBe(projectId);
    expect(listed[0]!.typedSearchAttributes.get(searchAttributeKeys.triggerSource)).toBe('doctor');
    expect(listed[0]!.typedSearchAttributes.get(searchAttributeKeys.deploymentId)).toBeUndefined();

    expect((await listAll(client, `WfTeamId = '${probeTeam}' AND WfProjectId = '${projectId}' AND WfTriggerSource = 'doctor'`)).map((e) => e.workflowId)).toEqual([workflowId]);
    expect(await listAll(client, `WfTeamId = '${randomUUID()}'`)).toEqual([]);
    expect(await listAll(client, `WfTeamId = '${probeTeam}' AND WfTriggerSource = 'schedule'`)).toEqual([]);

    const description = await client.workflow.getHandle(workflowId).describe();
    expect(await description.staticSummary()).toBe('Run of "Probe" v1.0');
  });

  it('a schedule created through the API carries them on its action, and the runs it starts are listed by WfTeamId', async () => {
    const { deploymentId } = await publishDirect(stack.db, graph, { teamId, publishedBy: ownerId });
    const projectId = (await stack.db.selectFrom('deployments').select('project_id').where('id', '=', deploymentId).executeTakeFirstOrThrow()).project_id;
    const res = await stack.app.inject({
      method: 'POST', url: `/projects/${projectId}/schedules`,
      headers: { authorization: `Bearer ${ownerJwt}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'nightly export', cron_expression: '0 0 1 1 *', deployment_id: deploymentId }),
    });
    expect(res.statusCode, res.body).toBe(201);
    const scheduleId = res.json().schedule.id as string;

    const schedule = await describeTemporalSchedule(stack, scheduleId);
    const action = schedule!.action;
    expect(action.type).toBe('startWorkflow');
    if (action.type !== 'startWorkflow') return;
    const attributes = typed(action.typedSearchAttributes);
    expect(attributes.get(searchAttributeKeys.teamId)).toBe(teamId);
    expect(attributes.get(searchAttributeKeys.projectId)).toBe(projectId);
    expect(attributes.get(searchAttributeKeys.deploymentId)).toBe(deploymentId);
    expect(attributes.get(searchAttributeKeys.triggerSource)).toBe('schedule');
    expect(attributes.get(searchAttributeKeys.documentId)).toBeUndefined();
    expect(action.staticSummary).toBe('Scheduled run of "nightly export"');

    // Fire it now: the execution the Schedule starts is found by the team, as an operator would.
    await client.schedule.getHandle(workflowIds.schedule(scheduleId)).trigger();
    const runs = await until(async () => {
      const found = await listAll(client, `WfTeamId = '${teamId}' AND WfTriggerSource = 'schedule' AND WorkflowType = 'scheduledRunWorkflow'`);
      return found.length > 0 && found;
    }, 15_000, 'the scheduled run to be listed by WfTeamId');
    expect(runs).toHaveLength(1);
    expect(runs[0]!.type).toBe('scheduledRunWorkflow');
    expect(runs[0]!.workflowId.startsWith(workflowIds.scheduledRun(scheduleId))).toBe(true);
    expect(runs[0]!.typedSearchAttributes.get(searchAttributeKeys.deploymentId)).toBe(deploymentId);
    expect(await (await client.workflow.getHandle(runs[0]!.workflowId).describe()).staticSummary()).toBe('Scheduled run of "nightly export"');
    expect(await client.workflow.getHandle(runs[0]!.workflowId).result()).toMatchObject({ success: true });
    // Its app run (a child) carries the same attributes, and the app's summary.
    const children = await until(async () => {
      const found = await listAll(client, `WfTeamId = '${teamId}' AND WfDeploymentId = '${deploymentId}' AND WorkflowType = 'appRunWorkflow'`);
      return found.length > 0 && found;
    }, 15_000, 'the scheduled app run to be listed');
    expect(children[0]!.typedSearchAttributes.get(searchAttributeKeys.triggerSource)).toBe('schedule');
  });

  it("a team's app runs started through the API are listed by WfTeamId and WfDeploymentId, with the app's name and version as summary", async () => {
    const make = credentialFactory(stack);
    const tenant = await make.fundedTenant();
    const other = await make.fundedTenant();
    const { deploymentId, documentId } = await publishDirect(stack.db, graph, { teamId: tenant.team.id });
    await stack.db.updateTable('documents').set({ name: 'Invoice reader' }).where('id', '=', documentId).execute();
    const runOf = async (apiKey: string, id: string) => {
      const res = await stack.app.inject({
        method: 'POST', url: `/api/released-app/${id}/run`, headers: { authorization: `Bearer ${apiKey}` }, payload: { stream: false },
      });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().runId as string;
    };
    const runIds = [await runOf(tenant.apiKey, deploymentId), await runOf(tenant.apiKey, deploymentId)];
    const elsewhere = await publishDirect(stack.db, graph, { teamId: other.team.id });
    await runOf(other.apiKey, elsewhere.deploymentId);

    const listed = await until(async () => {
      const found = await listAll(client, `WfTeamId = '${tenant.team.id}'`);
      return found.length >= 2 && found;
    }, 15_000, "the team's runs to be listed by WfTeamId");
    expect(listed.map((e) => e.workflowId).sort()).toEqual(runIds.map((id) => workflowIds.appRun(id)).sort());
    const [first] = listed;
    expect(first!.typedSearchAttributes.get(searchAttributeKeys.deploymentId)).toBe(deploymentId);
    expect(first!.typedSearchAttributes.get(searchAttributeKeys.documentId)).toBe(documentId);
    expect(first!.typedSearchAttributes.get(searchAttributeKeys.triggerSource)).toBe('api-key');
    expect((await listAll(client, `WfDeploymentId = '${deploymentId}'`)).length).toBe(2);
    expect(await (await client.workflow.getHandle(first!.workflowId).describe()).staticSummary()).toMatch(/^Run of "Invoice reader" v1\.0$/);
  });
});
