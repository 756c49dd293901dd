import type { CaptureDeps } from './capture-deps.js';
import { createDocument } from '../../shared/documents/service.js';
import { publishDocument } from '../../shared/publishing/service.js';
import { createBinding } from '../../shared/connectors/bindings.js';
import { POLL_NOW_UPDATE } from '../../shared/connectors/contracts.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { startRecordedWorkflow } from '../../shared/workflow-starts/start-path.js';
import { startDovecot } from '../../test/harness/dovecot.js';
import { mail, mailGraph } from '../../test/harness/mail.js';

// The polling workflow's replay fixture (scripts/capture-workflow-histories.ts): a binding on a
// mailbox of a local dovecot polls (the baseline), two mails arrive and become two runs through
// the dispatch endpoint, `connector poll` asks for a poll through the Update, and revoking the
// connection ends the workflow, so the history holds every command it issues.

export const connectorFixtureNames = ['connector-poll'];

async function until<T>(probe: () => Promise<T | null | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export async function captureConnectorPoll(deps: CaptureDeps): Promise<void> {
  const { db, app, client, jwt } = deps;
  const dovecot = await startDovecot();
  try {
    await dovecot.users.add('capture', 'capture-pass');
    await upsertSiteSetting(db, 'http_block.allow_hosts', [...await deps.settings.get('http_block.allow_hosts'), `${dovecot.host}:${dovecot.port}`]);
    deps.settings.invalidate();
    const call = (method: 'POST' | 'DELETE', url: string, payload?: object) =>
      app.inject({ method, url, headers: { authorization: `Bearer ${jwt}` }, ...(payload ? { payload } : {}) });
    const created = await call('POST', '/api/connectors/connections', {
      service: 'imap_mail', credentials: { host: dovecot.host, port: String(dovecot.port), tls: 'false', username: 'capture', password: 'capture-pass' },
    });
    const connectionId = (created.json() as { data: { id: string } }).data.id;
    const tested = await call('POST', `/api/connectors/connections/${connectionId}/test`);
    if (!(tested.json() as { data: { ok: boolean } }).data.ok) throw new Error(`connection test failed: ${tested.body}`);

    const operator = { kind: 'operator' } as const;
    const document = await createDocument(db, operator, { projectId: deps.projectId, name: 'Mail triage', graph: mailGraph });
    await publishDocument(db, operator, document.id, {});
    const { binding, pollStart } = await createBinding(db, { documentId: document.id, connectionId, trigger: 'poll_new_email', pollSeconds: 1 }, { taskQueueSuffix: deps.taskQueueSuffix });
    await startRecordedWorkflow({ db, temporal: client }, pollStart, 'refuse');
    await until(() => db.selectFrom('connector_poll_cursors').select('binding_id').where('binding_id', '=', binding.id).executeTakeFirst(), 'the baseline');

    await dovecot.appendMessages('capture', [mail('First'), mail('Second')]);
    const handle = client.workflow.getHandle(pollStart.workflowId);
    await handle.executeUpdate(POLL_NOW_UPDATE);
    await until(async () => {
      const runs = await db.selectFrom('runs').select(['id', 'status']).where('document_id', '=', document.id).execute();
      return runs.length === 2 && runs.every((r) => r.status !== 'running') ? runs : null;
    }, 'two finished runs');
    await call('DELETE', `/api/connectors/connections/${connectionId}`);
    await handle.result();
    await deps.save('connector-poll', pollStart.workflowId);
  } finally {
    await dovecot.stop();
  }
}
