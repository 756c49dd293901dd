import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { startNowOrFallBack, type StartPathDeps } from './start-path.js';
import type { WorkflowStart } from './outbox.js';

// The fallback rules of the start path, with the engine's start failing on purpose: which error
// the caller sees, and when a start is left to the dispatcher instead.
const start: WorkflowStart = { workflowId: 'wf-1', workflowType: 'anyWorkflow', taskQueue: 'q', args: [], search: { appName: 'a', version: 'v', teamId: 't', triggerSource: 'api' } as unknown as WorkflowStart['search'], staticSummary: 's' };
const temporalDown = Object.assign(new Error('14 UNAVAILABLE: Connection refused'), { code: 14, metadata: {} });
const failingTemporal = { workflow: { start: async () => { throw temporalDown; } } } as unknown as Client;
const deps: StartPathDeps = { db: {} as Database, temporal: failingTemporal };
const databaseDown = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

describe('startNowOrFallBack', () => {
  it('refuse: a withdrawn start answers 503 naming Temporal', async () => {
    const refused = startNowOrFallBack(deps, start, { whenEngineDown: 'refuse', withdraw: async () => true });
    await expect(refused).rejects.toBeInstanceOf(AppError);
    await expect(refused).rejects.toMatchObject({ status: 503, extra: { dependency: 'temporal' } });
  });

  it('refuse: a start a dispatcher holds goes ahead, and the caller waits for it', async () => {
    await expect(startNowOrFallBack(deps, start, { whenEngineDown: 'refuse', withdraw: async () => false })).resolves.toBe(false);
  });

  it('refuse: a withdrawal that cannot reach the database leaves the start to the dispatcher instead of failing the caller', async () => {
    await expect(startNowOrFallBack(deps, start, { whenEngineDown: 'refuse', withdraw: async () => { throw databaseDown; } })).resolves.toBe(false);
  });

  it('refuse: any other withdrawal failure is the caller\'s error', async () => {
    const bug = new TypeError('a bug');
    await expect(startNowOrFallBack(deps, start, { whenEngineDown: 'refuse', withdraw: async () => { throw bug; } })).rejects.toBe(bug);
  });

  it('queue: never withdraws and never throws', async () => {
    let withdrawn = false;
    await expect(startNowOrFallBack(deps, start, { whenEngineDown: 'queue', withdraw: async () => (withdrawn = true) })).resolves.toBe(false);
    expect(withdrawn).toBe(false);
  });
});
