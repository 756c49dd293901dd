import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import type { StoredRunEvent } from '../../../shared/app-runs/event-log.js';
import { ResponseBudget, type ResponseTooLargeBody } from '../../../shared/app-runs/limits.js';
import { runResultOf } from '../../../shared/app-runs/run-result.js';
import type { AppDeps } from '../../deps.js';

/** The non-streaming run result (spec §2.20) as a response schema. */
export const runResultSchema = z.object({
  runId: z.uuid(), documentId: z.uuid(), sessions: z.array(z.unknown()), duration: z.number().nullable(),
  status: z.string().describe('`completed`, or how the run ended (`failed`, `timed_out`, `cancelled`)'),
  timedOut: z.boolean(), error: z.unknown().optional().describe('only when the run did not complete'),
});

/**
 * JSON mode of a started run for callers that always wait (webhook triggers, cross-team proxy):
 * waits for the terminal event and measures the result against `run.response_limit`. A caller that
 * goes away stops the waiting; the run itself goes on. Returns the serialized result (it had to be
 * measured, so it is sent as it is), or the 413 body when it is over the cap.
 */
export async function awaitRunResult(
  deps: Pick<AppDeps, 'db' | 'runEvents' | 'settings'>, reply: FastifyReply, run: { runId: string; documentId: string },
): Promise<{ json: string } | { tooLarge: ResponseTooLargeBody }> {
  const abort = new AbortController();
  reply.raw.once('close', () => abort.abort());
  reply.header('x-run-id', run.runId);
  let terminal: StoredRunEvent | undefined;
  for await (const event of deps.runEvents.events(deps.db, run.runId, { signal: abort.signal })) terminal = event;
  const json = JSON.stringify(runResultOf(run.runId, run.documentId, terminal));
  const budget = new ResponseBudget((await deps.settings.get('run.response_limit')).maxBytes);
  return budget.add(Buffer.byteLength(json)) ? { json } : { tooLarge: budget.tooLargeBody(run.runId) };
}
