import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPdfInputActivities } from '../../activities/app-runs/pdf-input.js';
import type { Graph } from '../../shared/documents/graph.js';
import { grantCredits } from '../../shared/billing/service.js';
import { createFileStore } from '../../shared/storage/index.js';
import { recordUpload, storeUploadBytes } from '../../shared/storage/service.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { makePdf } from '../harness/pdf.js';
import { createTestStack, type TestStack } from '../harness/stack.js';


const HELLO = makePdf(['Hello PDF']);

// PDF inputs end to end: API → workflow → extractPdfText activity (pdf.js) → the input's output.
describe('PDF inputs', () => {
  let stack: TestStack;
  let apiKey: string;
  let teamId: string;
  let ownerId: string;

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
    const make = credentialFactory(stack);
    const owner = await make.user('owner');
    ownerId = owner.id;
    teamId = (await make.team(owner.id)).id;
    await grantCredits(stack.db, { teamId, amountMilli: 10_000 });
    apiKey = (await make.apiKey(teamId, owner.id)).token;
  });
  afterAll(async () => {
    await stack?.close();
  });

  const graph: Graph = {
    blocks: [
      { id: 'doc', type: 'input', name: 'doc', config: { valueType: 'pdf', required: true } },
      { id: 'o', type: 'output', name: 'o', config: { value: '{{doc}}' } },
    ],
    edges: [{ from: 'doc', to: 'o' }],
  };
  const publish = () => publishDirect(stack.db, graph, { teamId });
  const projectOf = async (deploymentId: string) =>
    (await stack.db.selectFrom('deployments').select('project_id').where('id', '=', deploymentId).executeTakeFirstOrThrow()).project_id;

  const storeFile = async (projectId: string, bytes: Buffer, contentType = 'application/pdf') => {
    const store = createFileStore(stack.config);
    const stored = await storeUploadBytes(store, { stream: Readable.from([bytes]), truncated: () => false, maxBytes: 1 << 24 });
    return (await recordUpload(stack.db, store, {
      caller: { kind: 'jwt', userId: ownerId }, project: { id: projectId, teamId }, stored, contentType, originalName: 'doc.pdf',
    })).handle;
  };

  const run = async (deploymentId: string, inputs: object) => {
    const res = await stack.app.inject({ method: 'POST', url: `/api/released-app/${deploymentId}/run`, headers: { authorization: `Bearer ${apiKey}` }, payload: { inputs } });
    expect(res.statusCode).toBe(200);
    return res.body.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
  };
  const outputOf = (events: Array<Record<string, unknown>>) => {
    expect(events.at(-1)!.type).toBe('run_complete');
    return (events.at(-1)!.sessions as Array<{ blockId: string; output: unknown }>).find((s) => s.blockId === 'o')!.output;
  };

  it('a data:application/pdf URI becomes the PDF text', async () => {
    const { deploymentId } = await publish();
    const events = await run(deploymentId, { doc: { _type: 'pdf', value: `data:application/pdf;base64,${HELLO.toString('base64')}` } });
    expect(outputOf(events)).toBe('Hello PDF');
  });

  it('bare base64 of a PDF (starting with JVBERi0), wrapped or as a plain string, becomes its text', async () => {
    const { deploymentId } = await publish();
    expect(HELLO.toString('base64').startsWith('JVBERi0')).toBe(true);
    expect(outputOf(await run(deploymentId, { doc: { _type: 'pdf', value: HELLO.toString('base64') } }))).toBe('Hello PDF');
    expect(outputOf(await run(deploymentId, { doc: HELLO.toString('base64') }))).toBe('Hello PDF');
  });

  it('a file handle (wf-file: and storage://) of the run project is read and converted, every page', async () => {
    const { deploymentId } = await publish();
    const handle = await storeFile(await projectOf(deploymentId), makePdf(['Hello PDF', 'Second (page)']));
    expect(outputOf(await run(deploymentId, { doc: { _type: 'pdf', value: handle } }))).toBe('Hello PDF\n\nSecond (page)');
    const storageUrl = handle.replace('wf-file:', 'storage://');
    expect(outputOf(await run(deploymentId, { doc: { _type: 'pdf', value: storageUrl } }))).toBe('Hello PDF\n\nSecond (page)');
  });

  it('text that is not PDF base64 stays plain text', async () => {
    const { deploymentId } = await publish();
    expect(outputOf(await run(deploymentId, { doc: { _type: 'pdf', value: 'just some notes' } }))).toBe('just some notes');
    expect(outputOf(await run(deploymentId, { doc: 'aGVsbG8gd29ybGQ=' }))).toBe('aGVsbG8gd29ybGQ=');
  });

  it('a data:application/pdf payload that is not a PDF fails the block (block_error, no retries)', async () => {
    const { deploymentId } = await publish();
    const notPdf = Buffer.from('hello world, not a pdf').toString('base64');
    const events = await run(deploymentId, { doc: { _type: 'pdf', value: `data:application/pdf;base64,${notPdf}` } });
    expect(events.map((e) => e.type)).toEqual(['run_start', 'block_error', 'run_error']);
    expect(events[1]).toMatchObject({ blockId: 'doc', error: "input 'doc' is not a readable PDF" });
  });

  describe('extractPdfText (the activity itself)', () => {
    const activity = () => createPdfInputActivities({ db: stack.db, config: stack.config }).extractPdfText;
    const runIdOf = async (deploymentId: string) => {
      const events = await run(deploymentId, { doc: 'plain' });
      return events[0]!.runId as string;
    };

    it('reports pages, and rejects bad base64, a %PDF- header with garbage, a non-PDF file, another project\'s file', async () => {
      const { deploymentId } = await publish();
      const runId = await runIdOf(deploymentId);
      const extract = activity();
      await expect(extract({ runId, blockId: 'doc', value: HELLO.toString('base64') })).resolves.toEqual({ text: 'Hello PDF', pages: 1 });
      await expect(extract({ runId, blockId: 'doc', value: 'data:application/pdf;base64,@@not base64@@' }))
        .rejects.toMatchObject({ nonRetryable: true, message: expect.stringContaining("input 'doc' is not a readable PDF") });
      await expect(extract({ runId, blockId: 'doc', value: Buffer.from('%PDF-1.4 garbage that is no document').toString('base64') }))
        .rejects.toMatchObject({ nonRetryable: true, message: "input 'doc' is not a readable PDF" });
      const textFile = await storeFile(await projectOf(deploymentId), Buffer.from('plain text file'), 'text/plain');
      await expect(extract({ runId, blockId: 'doc', value: textFile })).rejects.toMatchObject({ nonRetryable: true, message: "input 'doc' is not a readable PDF" });
      const other = await publish();
      const foreign = await storeFile(await projectOf(other.deploymentId), HELLO);
      await expect(extract({ runId, blockId: 'doc', value: foreign })).rejects.toMatchObject({ nonRetryable: true, message: "input 'doc': File not found" });
    });
  });
});
