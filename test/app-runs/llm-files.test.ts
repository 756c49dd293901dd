import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { countUsage, createLlmBlockActivities } from '../../activities/app-runs/llm-block.js';
import type { LlmBlockRequest } from '../../shared/app-runs/contracts.js';
import type { Graph } from '../../shared/documents/graph.js';
import { llmChargeReference } from '../../shared/billing/llm-charges.js';
import { llmTokenCostMilli } from '../../shared/billing/pricing.js';
import { createProject } from '../../shared/identity/service.js';
import { resolveSiteSetting } from '../../shared/site-settings/schemas.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { createFileStore } from '../../shared/storage/index.js';
import { recordUpload, storeUploadBytes } from '../../shared/storage/service.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { makePdf } from '../harness/pdf.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { startFakeLlm, type FakeLlm, type FakeLlmRequest } from './llm-server.js';

/** A one-page PDF of `text`, padded to about `padding` bytes. */
const makeTextPdf = (text: string, padding = 0): Buffer => makePdf([text], padding);

// Only the magic bytes matter to the block (the fake model does not decode images).
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('\0\0\0\rIHDR png body')]);
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from('\0\x10JFIF jpeg body')]);
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([20, 0, 0, 0]), Buffer.from('WEBPVP8 webp body')]);
const GIF = Buffer.from('GIF89a\x01\0\x01\0 gif body', 'latin1');
const HELLO = makeTextPdf('Hello PDF');
const b64 = (bytes: Buffer) => bytes.toString('base64');

type Part = { type: string; text?: string; file?: { filename: string; file_data: string }; image_url?: { url: string } };
/** The user message's content as the model server received it. */
const userContent = (request: FakeLlmRequest) =>
  (request.body.messages as Array<{ role: string; content: string | Part[] }>).find((m) => m.role === 'user')!.content;

// `files` of llm blocks: PDFs and images reach the OpenAI-compatible server as content parts.
describe('llm block files (native PDFs and images)', () => {
  let stack: TestStack;
  let llm: FakeLlm;
  let apiKey: string;
  let teamId: string;
  let ownerId: string;
  const USAGE = { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 };

  beforeAll(async () => {
    llm = await startFakeLlm();
    stack = await createTestStack({ LLM_BASE_URL: llm.url, LLM_API_KEY: 'sk-test' });
    await stack.startWorker();
    const tenant = await credentialFactory(stack).fundedTenant(10_000_000);
    apiKey = tenant.apiKey;
    teamId = tenant.team.id;
    ownerId = tenant.owner.id;
    // `pdf-model` reads PDFs anywhere; `local-*` only from a provider on 127.0.0.*; `picky-*` only elsewhere.
    await upsertSiteSetting(stack.db, 'llm_block.pdf_support', [
      { model: 'pdf-model', pdf: true },
      { provider: 'api.elsewhere.example', model: 'picky-*', pdf: true },
      { provider: '127.0.0.*', model: 'local-*', pdf: true },
    ]);
    stack.deps.settings.invalidate();
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
    await llm?.close();
  });
  beforeEach(() => {
    llm.configure({ text: 'Seen it.', usage: USAGE });
    llm.requests.length = 0;
  });

  /** doc (pdf), photo (string), scan (file) inputs; the llm block passes `files` and reads doc's text in its prompt. */
  const appGraph = (model: string, files: string[]): Graph => ({
    blocks: [
      { id: 'doc', type: 'input', name: 'doc', config: { valueType: 'pdf', required: false } },
      { id: 'photo', type: 'input', name: 'photo', config: { valueType: 'string', required: false } },
      { id: 'scan', type: 'input', name: 'scan', config: { valueType: 'file', required: false } },
      { id: 'ask', type: 'llm', name: 'ask', config: { model, prompt: 'Describe. Text: {{doc}}', files } },
      { id: 'o', type: 'output', name: 'o', config: { value: '{{ask.text}}' } },
    ],
    edges: [{ from: 'doc', to: 'ask' }, { from: 'photo', to: 'ask' }, { from: 'scan', to: 'ask' }, { from: 'ask', to: 'o' }],
  });
  const publish = (graph: Graph) => publishDirect(stack.db, graph, { teamId });
  const run = async (deploymentId: string, inputs: object) => {
    const res = await stack.app.inject({
      method: 'POST', url: `/api/released-app/${deploymentId}/run`,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, payload: JSON.stringify({ inputs }),
    });
    expect(res.statusCode, res.body.slice(0, 500)).toBe(200);
    return res.body.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
  };
  const completed = (events: Array<Record<string, unknown>>) => {
    expect(events.at(-1), JSON.stringify(events.filter((e) => e.type === 'block_error'))).toMatchObject({ type: 'run_complete' });
    return events;
  };
  const projectOf = async (deploymentId: string) =>
    (await stack.db.selectFrom('deployments').select('project_id').where('id', '=', deploymentId).executeTakeFirstOrThrow()).project_id;
  const upload = async (projectId: string, bytes: Buffer, originalName: string, contentType = 'application/pdf') => {
    const store = createFileStore(stack.config);
    const stored = await storeUploadBytes(store, { stream: Readable.from([bytes]), truncated: () => false, maxBytes: 1 << 24 });
    return (await recordUpload(stack.db, store, {
      caller: { kind: 'jwt', userId: ownerId }, project: { id: projectId, teamId }, stored, contentType, originalName,
    })).handle;
  };

  it('(a) bare PDF base64 → a file part with a data:application/pdf;base64, prefix; the prompt still reads the PDF text', async () => {
    const { deploymentId } = await publish(appGraph('pdf-model', ['doc']));
    completed(await run(deploymentId, { doc: b64(HELLO) }));
    expect(llm.requests).toHaveLength(1);
    expect(userContent(llm.requests[0]!)).toEqual([
      { type: 'file', file: { filename: 'doc.pdf', file_data: `data:application/pdf;base64,${b64(HELLO)}` } },
      { type: 'text', text: 'Describe. Text: Hello PDF' },
    ]);
  });

  it('(a) a PDF over the claim threshold reaches the model whole, and never enters workflow history', async () => {
    const big = makeTextPdf('Big PDF', 200_000);
    expect(b64(big).length).toBeGreaterThan(250_000);
    const { deploymentId } = await publish(appGraph('pdf-model', ['doc']));
    const events = completed(await run(deploymentId, { doc: { _type: 'pdf', value: `data:application/pdf;base64,${b64(big)}` } }));
    expect(userContent(llm.requests[0]!)).toEqual([
      { type: 'file', file: { filename: 'doc.pdf', file_data: `data:application/pdf;base64,${b64(big)}` } },
      { type: 'text', text: 'Describe. Text: Big PDF' },
    ]);
    const runId = events[0]!.runId as string;
    // The input travelled as a claim (the PDF input block's text extraction read it); the llm block named it only.
    const payloads = await stack.db.selectFrom('run_payloads').select('key').where('run_id', '=', runId).execute();
    expect(payloads.map((p) => p.key)).toEqual(['input:doc']);
    const history = await stack.deps.temporal.client.workflow.getHandle(workflowIds.appRun(runId)).fetchHistory();
    const sizes = (history.events ?? []).map((event) => JSON.stringify(event, (key, v: unknown) => (
      v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : key === 'data' && typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : v)).length);
    expect(Math.max(...sizes)).toBeLessThan(64 * 1024);
  }, 60_000);

  it('(b) PNG and JPEG bytes → image_url parts with their mime, whatever a data: URI claimed', async () => {
    const { deploymentId } = await publish(appGraph('text-model', ['photo', 'scan']));
    completed(await run(deploymentId, { photo: b64(PNG), scan: `data:image/png;base64,${b64(JPEG)}` }));
    expect(userContent(llm.requests[0]!)).toEqual([
      { type: 'image_url', image_url: { url: `data:image/png;base64,${b64(PNG)}` } },
      { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${b64(JPEG)}` } },
      { type: 'text', text: 'Describe. Text: ' },
    ]);
  });

  it('(c) a model without PDF support gets the hint text in place of the PDF (images still go); no file part', async () => {
    const { deploymentId } = await publish(appGraph('text-model', ['doc', 'photo']));
    completed(await run(deploymentId, { doc: `data:application/pdf;base64,${b64(HELLO)}`, photo: b64(JPEG) }));
    const content = userContent(llm.requests[0]!) as Part[];
    expect(content).toEqual([
      { type: 'text', text: '[PDF "doc.pdf" omitted: this model cannot read PDF files]' },
      { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${b64(JPEG)}` } },
      { type: 'text', text: 'Describe. Text: Hello PDF' },
    ]);
    expect(content.some((part) => part.type === 'file')).toBe(false);
    expect(JSON.stringify(llm.requests[0]!.body)).not.toContain(b64(HELLO).slice(0, 40));
  });

  it('(d) file handles of the run project → a file part with the file\'s bytes and name, and an image part', async () => {
    const { deploymentId } = await publish(appGraph('pdf-model', ['scan', 'doc']));
    const projectId = await projectOf(deploymentId);
    const report = makeTextPdf('Quarterly report');
    const pdfHandle = await upload(projectId, report, 'report.pdf');
    const pngHandle = await upload(projectId, PNG, 'photo.png', 'image/png');
    completed(await run(deploymentId, { scan: pngHandle, doc: { _type: 'pdf', value: pdfHandle.replace('wf-file:', 'storage://') } }));
    expect(userContent(llm.requests[0]!)).toEqual([
      { type: 'image_url', image_url: { url: `data:image/png;base64,${b64(PNG)}` } },
      { type: 'file', file: { filename: 'report.pdf', file_data: `data:application/pdf;base64,${b64(report)}` } },
      { type: 'text', text: 'Describe. Text: Quarterly report' },
    ]);
  });

  it('(d) another project\'s file fails the block: File not found', async () => {
    const { deploymentId } = await publish(appGraph('pdf-model', ['scan']));
    const other = await publish(appGraph('pdf-model', ['scan']));
    const foreign = await upload(await projectOf(other.deploymentId), PNG, 'photo.png', 'image/png');
    const events = await run(deploymentId, { scan: foreign });
    expect(events.find((e) => e.type === 'block_error')).toMatchObject({ blockId: 'ask', error: "file 'scan': File not found" });
    expect(llm.requests).toHaveLength(0);
  });

  it('(e) unknown magic (or no base64 at all) fails the run with a clear block error, before calling the model', async () => {
    const { deploymentId } = await publish(appGraph('pdf-model', ['photo']));
    const events = await run(deploymentId, { photo: b64(Buffer.from('just some plain text, not an image')) });
    expect(events.map((e) => e.type)).toEqual(['run_start', 'block_start', 'block_error', 'run_error']);
    expect(events[2]).toMatchObject({ blockId: 'ask', error: "file 'photo' is neither a PDF nor a PNG, JPEG, WebP or GIF image" });
    expect(events[3]).toMatchObject({ error: expect.stringContaining("Block 'ask' failed: file 'photo' is neither a PDF") });
    const notBase64 = await run(deploymentId, { photo: 'hello there!' });
    expect(notBase64.find((e) => e.type === 'block_error')).toMatchObject({
      blockId: 'ask', error: "file 'photo' is not a file: expected a file handle, a data: URI or base64",
    });
    expect(llm.requests).toHaveLength(0);
  });

  it('an optional file input left out is simply not sent', async () => {
    const { deploymentId } = await publish(appGraph('pdf-model', ['doc', 'photo']));
    completed(await run(deploymentId, { photo: b64(GIF) }));
    expect(userContent(llm.requests[0]!)).toEqual([
      { type: 'image_url', image_url: { url: `data:image/gif;base64,${b64(GIF)}` } },
      { type: 'text', text: 'Describe. Text: ' },
    ]);
  });

  it('without a provider count, the charge counts the prompt and hint texts, never a file\'s base64', async () => {
    llm.configure({ text: 'Seen it.', usage: null });
    const big = makeTextPdf('Big PDF', 100_000);
    for (const model of ['pdf-model', 'text-model']) {
      const { deploymentId } = await publish(appGraph(model, ['doc']));
      const events = completed(await run(deploymentId, { doc: `data:application/pdf;base64,${b64(big)}` }));
      const runId = events[0]!.runId as string;
      const hint = model === 'text-model' ? [{ type: 'text' as const, text: '[PDF "doc.pdf" omitted: this model cannot read PDF files]' }] : [];
      const usage = countUsage({ prompt: 'Describe. Text: Big PDF' }, 'Seen it.', hint);
      expect(usage.promptTokens).toBeLessThan(100);
      const charge = await stack.db.selectFrom('credit_transactions').select('amount_milli')
        .where('reference', '=', llmChargeReference(runId, 'ask')).executeTakeFirstOrThrow();
      expect(Number(charge.amount_milli)).toBe(-llmTokenCostMilli(resolveSiteSetting('billing.rules', undefined), model, usage));
    }
    // A file part's payload adds nothing to our count.
    const filePart = { type: 'file' as const, file: { filename: 'a.pdf', file_data: `data:application/pdf;base64,${b64(big)}` } };
    expect(countUsage({ prompt: 'p' }, 'c', [filePart])).toEqual(countUsage({ prompt: 'p' }, 'c'));
  }, 60_000);

  describe('the activity itself', () => {
    let deploymentId: string;
    beforeAll(async () => {
      ({ deploymentId } = await publish(appGraph('pdf-model', ['doc'])));
    });
    const runWith = async (inputs: Record<string, unknown>) => {
      const deployment = await stack.db.selectFrom('deployments').select(['document_id', 'team_id']).where('id', '=', deploymentId).executeTakeFirstOrThrow();
      const id = randomUUID();
      await stack.db.insertInto('runs').values({
        id, deployment_id: deploymentId, document_id: deployment.document_id, team_id: deployment.team_id, trigger_source: 'api-key', inputs: JSON.stringify(inputs),
      }).execute();
      return id;
    };
    const activity = () => createLlmBlockActivities({
      db: stack.db, config: { LLM_BASE_URL: llm.url, DATA_DIR: stack.config.DATA_DIR }, secrets: stack.deps.secrets, settings: stack.deps.settings,
    }).runLlmBlock;
    const call = (runId: string, model: string, files: LlmBlockRequest['files']) => activity()({ runId, blockId: 'l', model, prompt: 'Look', files });

    it('WebP and GIF, an input found by block id, a string default, and provider-scoped PDF rules', async () => {
      const runId = await runWith({ a: b64(WEBP), b_id: `data:image/gif;base64,${b64(GIF)}`, pdf: b64(HELLO) });
      await call(runId, 'local-model', [
        { blockId: 'a_id', name: 'a' },
        { blockId: 'b_id', name: 'b' },
        { blockId: 'c_id', name: 'c', default: b64(PNG) },
        { blockId: 'pdf', name: 'pdf' },
      ]);
      expect(userContent(llm.requests[0]!)).toEqual([
        { type: 'image_url', image_url: { url: `data:image/webp;base64,${b64(WEBP)}` } },
        { type: 'image_url', image_url: { url: `data:image/gif;base64,${b64(GIF)}` } },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${b64(PNG)}` } },
        { type: 'file', file: { filename: 'pdf.pdf', file_data: `data:application/pdf;base64,${b64(HELLO)}` } },
        { type: 'text', text: 'Look' },
      ]);
      // `picky-*` reads PDFs only from api.elsewhere.example, not from this 127.0.0.1 server.
      await call(runId, 'picky-model', [{ blockId: 'pdf', name: 'pdf' }]);
      expect(userContent(llm.requests[1]!)).toEqual([
        { type: 'text', text: '[PDF "pdf.pdf" omitted: this model cannot read PDF files]' },
        { type: 'text', text: 'Look' },
      ]);
    });

    it('a value that is not a string fails for good (LlmFileRejected); no files means a plain string prompt', async () => {
      const runId = await runWith({ doc: { pages: 3 } });
      await expect(call(runId, 'pdf-model', [{ blockId: 'doc', name: 'doc' }])).rejects.toMatchObject({
        nonRetryable: true, type: 'LlmFileRejected', message: "file 'doc' is not a file: expected a file handle, a data: URI or base64",
      });
      await call(runId, 'pdf-model', undefined);
      expect(userContent(llm.requests.at(-1)!)).toBe('Look');
    });
  });

  describe('(f) the graph format: a malformed `files` is refused', () => {
    let jwt: string;
    let projectId: string;
    beforeAll(async () => {
      const make = credentialFactory(stack);
      const owner = await make.user('files-owner');
      const team = await make.team(owner.id);
      jwt = await make.jwt(owner.id);
      projectId = (await createProject(stack.db, { teamId: team.id, name: 'Apps' })).id;
    });
    const withFiles = (files: unknown) => ({ ...appGraph('pdf-model', []), blocks: appGraph('pdf-model', []).blocks.map((b) => (b.id === 'ask' ? { ...b, config: { ...b.config, files } } : b)) });
    const post = (url: string, payload: object) => stack.app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${jwt}` }, payload });

    it.each([
      ['a string instead of a list', 'doc', /config\.files: /],
      ['a block that is not an input', ['o'], /config\.files\.0: 'o' is not an input block \(type output\)/],
      ['a name of no block', ['ghost'], /config\.files\.0: 'ghost' names no block/],
    ])('on create: %s → 400 invalid_graph naming the llm block', async (_name, files, message) => {
      const res = await post(`/projects/${projectId}/documents`, { name: 'Bad', graph: withFiles(files) });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({ error: 'invalid_graph', details: [{ blockId: 'ask', message: expect.stringMatching(message) }] });
    });

    it('on publish: a stored draft whose files name a number input is refused; a good one publishes with the input in its schema', async () => {
      const good = await post(`/projects/${projectId}/documents`, { name: 'Good', graph: withFiles(['doc', 'scan']) });
      expect(good.statusCode, good.body).toBe(201);
      const published = await post(`/documents/${good.json().document.id as string}/publish`, {});
      expect(published.statusCode, published.body).toBe(201);
      expect(published.json().deployment.apiSchema.inputs.map((f: { blockId: string }) => f.blockId)).toEqual(['doc', 'scan']);

      const bad = withFiles(['n']);
      bad.blocks.push({ id: 'n', type: 'input', name: 'n', config: { valueType: 'number', required: false } });
      const documentId = randomUUID();
      await stack.db.insertInto('documents').values({ id: documentId, project_id: projectId, name: 'Bad', graph: JSON.stringify(bad), created_by: null }).execute();
      const res = await post(`/documents/${documentId}/publish`, {});
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({
        error: 'invalid_graph',
        details: [{ blockId: 'ask', message: "config.files.0: input 'n' has valueType 'number'; files take pdf, file, string inputs" }],
      });
    });
  });
});
