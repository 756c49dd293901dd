import type { CaptureDeps } from './capture-deps.js';
import { createDocument } from '../../shared/documents/service.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { taskQueueName } from '../../temporal/task-queues.js';
import { workflowIds } from '../../temporal/workflow-ids.js';

// The project graph's replay fixtures (scripts/capture-workflow-histories.ts): one episode ingested
// through the API with the built-in extractor, and one memory generation built by its workflow.


export const graphFixtureNames = ['graph-ingest', 'graph-build'];

export async function captureProjectGraph(deps: CaptureDeps): Promise<void> {
  const { db, app, client } = deps;
  await upsertSiteSetting(db, 'graph.config', { enabled: true, extractor: 'builtin' });
  deps.settings.invalidate();
  if (deps.wanted('graph-ingest')) {
    const res = await app.inject({
      method: 'POST', url: `/projects/${deps.projectId}/graph/episodes`, headers: { authorization: `Bearer ${deps.jwt}` },
      payload: { name: 'Capture', content: 'Ada Lovelace wrote the first program. Charles Babbage built the engine.' },
    });
    if (res.statusCode !== 202) throw new Error(`episode refused: ${res.statusCode} ${res.body}`);
    const workflowId = workflowIds.graphIngest((res.json() as { jobId: string }).jobId);
    await client.workflow.getHandle(workflowId).result();
    await deps.save('graph-ingest', workflowId);
  }
  if (deps.wanted('graph-build')) {
    await createDocument(db, { kind: 'operator' }, { projectId: deps.projectId, name: 'Capture memory', graph: { blocks: [], edges: [] } });
    const workflowId = workflowIds.graphBuild('capture');
    await client.workflow.execute('graphBuildWorkflow', {
      taskQueue: taskQueueName('platform', deps.taskQueueSuffix), workflowId, args: [{ projectId: deps.projectId }],
    });
    await deps.save('graph-build', workflowId);
  }
}
