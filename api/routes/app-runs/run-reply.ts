import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import type { StoredRunEvent } from '../../../shared/app-runs/run-events-repository.js';
import { ResponseBudget } from '../../../shared/app-runs/response-budget.js';
import { runResultOf, type RunResult } from '../../../shared/app-runs/run-result.js';
import { isTerminal } from '../../../shared/app-runs/run-followers.js';
import { waitingRunAnswer, type WaitingRunAnswer } from '../../../shared/app-runs/waiting-answer.js';
import type { StartedRun } from '../../../shared/app-runs/run-service.js';
import { AppError } from '../../../shared/errors.js';
import { KEEP_ALIVE, keepAliveFrame, withKeepAlive } from './keep-alive.js';
import type { AppDeps } from '../../deps.js';

// How every route answers a run it started: the JSON result (waited for here, and only here) or a
// stream of the run's events. A caller that goes away stops the waiting or the reading; the run
// itself goes on (resume with the run id).

type ReplyDeps = Pick<AppDeps, 'db' | 'runEvents' | 'settings'>;
export type StreamFormat = 'ndjson' | 'sse';

/** The non-streaming run result (spec §2.20) as a response schema. */
export const runResultSchema = z.object({
  runId: z.uuid(), documentId: z.uuid(), sessions: z.array(z.unknown()), duration: z.number().nullable(),
  status: z.string().describe('`completed`, or how the run ended (`failed`, `timed_out`, `cancelled`)'),
  timedOut: z.boolean(), error: z.unknown().optional().describe('only when the run did not complete'),
});

/** One NDJSON line or SSE frame per stored event; the SSE `id:` lets a client resume with Last-Event-ID. */
export function eventFrame(event: StoredRunEvent, format: StreamFormat): string {
  const data = JSON.stringify({ type: event.type, ...event.payload });
  return format === 'sse' ? `id: ${event.id}\nevent: ${event.type}\ndata: ${data}\n\n` : `${data}\n`;
}

/**
 * The run's events from its start: a new run's `run_start` at once, then the log after it (a replay
 * reads it all). `terminalOnly`: the caller needs only the terminal event (event-log.ts).
 */
async function* runEventsOf(deps: ReplyDeps, reply: FastifyReply, run: StartedRun, terminalOnly = false): AsyncGenerator<StoredRunEvent> {
  const abort = new AbortController();
  reply.raw.once('close', () => abort.abort());
  if (run.startEvent) yield run.startEvent;
  yield* deps.runEvents.events(deps.db, run.runId, { signal: abort.signal, afterId: run.startEvent?.id, watch: run.watch, terminalOnly });
}

/**
 * Waits for the run's terminal event and gives its result (spec §2.20). A run whose start was
 * refused (Temporal down) rejects here with 503 before anything is sent: it was withdrawn and refunded.
 */
export async function awaitRunResult(deps: ReplyDeps, reply: FastifyReply, run: StartedRun): Promise<RunResult> {
  const answer = await awaitRunAnswer(deps, reply, run, { untilWaiting: false });
  return answer as RunResult;
}

/**
 * The run's result, or — `untilWaiting` — the 202 answer as soon as it begins to wait on a `wait`
 * or `approval` block (CONTRACTS.md "Long runs": JSON mode does not hold a connection for days).
 */
export async function awaitRunAnswer(deps: ReplyDeps, reply: FastifyReply, run: StartedRun, options: { untilWaiting: boolean }): Promise<RunResult | WaitingRunAnswer> {
  await run.started;
  reply.header('x-run-id', run.runId);
  let terminal: StoredRunEvent | undefined;
  for await (const event of runEventsOf(deps, reply, run, true)) {
    if (isTerminal(event)) terminal = event;
    else if (options.untilWaiting && event.type === 'block_waiting') return waitingRunAnswer(run.runId, event);
  }
  return runResultOf(run.runId, run.documentId, terminal);
}

export const isWaitingAnswer = (answer: RunResult | WaitingRunAnswer): answer is WaitingRunAnswer => answer.status === 'waiting';

/**
 * JSON mode: the run result, measured against `run.response_limit`, or 202 `{ runId, status:
 * "waiting", waiting, statusUrl, eventsUrl }` once the run begins to wait. Over the cap it is 413
 * `response_too_large` with `runId`, `actualBytes`, `limitBytes` (spec §7.2), in the route
 * family's error envelope.
 */
export async function replyWithRunResult(deps: ReplyDeps, reply: FastifyReply, run: StartedRun): Promise<FastifyReply> {
  const answer = await awaitRunAnswer(deps, reply, run, { untilWaiting: true });
  if (isWaitingAnswer(answer)) return reply.code(202).type('application/json; charset=utf-8').send(JSON.stringify(answer));
  const json = JSON.stringify(answer);
  const budget = new ResponseBudget((await deps.settings.get('run.response_limit')).maxBytes);
  if (!budget.add(Buffer.byteLength(json))) {
    const { error, message, ...extra } = budget.tooLargeBody(run.runId);
    throw new AppError(413, error, message, extra);
  }
  // Already serialized (it had to be measured); Fastify sends a JSON-typed string as it is.
  return reply.type('application/json; charset=utf-8').send(json);
}

/**
 * Streaming mode: NDJSON lines or SSE frames as the events are stored. Over `run.response_limit`
 * the status stays 200 and the stream ends with `run_error` instead of the oversized event.
 */
export async function replyWithRunStream(deps: ReplyDeps, reply: FastifyReply, run: StartedRun, format: StreamFormat): Promise<FastifyReply> {
  const budget = new ResponseBudget((await deps.settings.get('run.response_limit')).maxBytes);
  const events = runEventsOf(deps, reply, run);
  reply.header('x-run-id', run.runId).header('cache-control', 'no-cache');
  reply.type(format === 'sse' ? 'text/event-stream; charset=utf-8' : 'application/x-ndjson; charset=utf-8');
  const keepAlive = await keepAliveOptions(deps);
  return reply.send(Readable.from((async function* () {
    for await (const event of withKeepAlive(events, keepAlive)) {
      if (event === KEEP_ALIVE) {
        yield keepAliveFrame(format);
        continue;
      }
      const frame = eventFrame(event, format);
      if (!budget.add(Buffer.byteLength(frame))) {
        const { message, actualBytes, limitBytes } = budget.tooLargeBody(run.runId);
        yield eventFrame({ id: event.id, type: 'run_error', payload: { runId: run.runId, error: 'response_too_large', message, actualBytes, limitBytes, executionStatus: 'response_too_large' } }, format);
        return;
      }
      yield frame;
    }
  })()));
}

/**
 * A waiting run's stream: a keep-alive every 15 s (more often when the idle close comes sooner), closed
 * after `runs.stream_idle_close_seconds` without an event.
 */
export async function keepAliveOptions(deps: Pick<AppDeps, 'settings'>): Promise<{ intervalMs: number; idleCloseMs: number }> {
  const idleCloseMs = (await deps.settings.get('runs.stream_idle_close_seconds')) * 1000;
  return { intervalMs: Math.min(15_000, Math.max(250, idleCloseMs / 2)), idleCloseMs };
}
