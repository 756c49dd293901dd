// The clients of the chaos run: a few concurrent loops, each sending one run request after the
// other for as long as the kills go on, half JSON (`stream: false`), half SSE streams that are
// resumed with Last-Event-ID whenever they break. Each request leaves a record of what the client
// saw; counting compares those records with the database afterwards.
import { randomUUID } from 'node:crypto';
import { pick, seededRng, type Rng } from './random.js';
import { readFrames, type Frame } from './sse.js';
import { sleep } from './timing.js';

/** The run's own timeout (seconds), well above a run's ~2 s, so kills delay runs but never time them out. */
const RUN_TIMEOUT_SECONDS = 120;
/** A request (with all its resumes) that has no outcome by then is a failure, not a hang. */
const REQUEST_DEADLINE_MS = 180_000;
/** A stream with no frame for this long is resumed (a run waiting for Temporal sends nothing for a while). */
const STREAM_IDLE_MS = 30_000;
/** Pause after a refusal or a connection error: keep probing the outage, without spinning. */
const PAUSE_AFTER_REFUSAL_MS = 500;

export type Outcome = 'ok' | 'refused' | 'server_error' | 'failure';

export interface RequestRecord {
  /** Sent as the `tag` input, so the run row can be found even when the answer had no run id. */
  tag: string;
  mode: 'json' | 'sse';
  startedAt: number;
  endedAt: number;
  outcome: Outcome;
  /** Status of the run request itself (null: no answer). */
  status: number | null;
  /** Retry-After of a 503 (the first request's, or any resume's); null when absent. */
  retryAfter: string | null;
  /** 503 answers (first request or resumes) that had no Retry-After header. */
  refusalsWithoutRetryAfter: number;
  runId: string | null;
  /** JSON mode: the run result's `status`. */
  resultStatus?: string;
  /** SSE: every frame received, in order, across the first response and every resume. */
  frames: Frame[];
  /** SSE: resumes made, and why (a broken or closed connection, silence, a refused resume). */
  resumes: number;
  idleResumes: number;
  /** When each silent read was given up, and the last id received then (to tell waiting from stalling). */
  idleAt: Array<{ at: number; lastId: number | null }>;
  refusedResumes: number;
  /** The run request sent again with its Idempotency-Key after a 503 that named no run. */
  retries: number;
  malformedFrames: number;
  /** The terminal event type received (SSE), or null. */
  terminal: string | null;
  /** What went wrong, for failures and server errors. */
  detail?: string;
}

interface DriveContext { apiUrl: string; apiKey: string; deploymentId: string }

const headers = (apiKey: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${apiKey}`, ...extra });

function newRecord(mode: RequestRecord['mode']): RequestRecord {
  return {
    tag: randomUUID(), mode, startedAt: Date.now(), endedAt: 0, outcome: 'failure', status: null, retryAfter: null,
    refusalsWithoutRetryAfter: 0, runId: null, frames: [], resumes: 0, idleResumes: 0, idleAt: [], refusedResumes: 0, retries: 0, malformedFrames: 0, terminal: null,
  };
}

/** A 503 is an acceptable answer during an outage when it says which dependency and when to retry. */
function noteRefusal(record: RequestRecord, res: Response): void {
  const retryAfter = res.headers.get('retry-after');
  if (retryAfter === null) record.refusalsWithoutRetryAfter += 1;
  else record.retryAfter = retryAfter;
}

async function bodyText(res: Response): Promise<string> {
  return (await res.text().catch((error: Error) => `<body unreadable: ${error.message}>`)).slice(0, 300);
}

/** Classifies a non-200 answer to the run request. */
async function classify(record: RequestRecord, res: Response): Promise<void> {
  record.status = res.status;
  record.runId ??= res.headers.get('x-run-id');
  if (res.status === 503) {
    noteRefusal(record, res);
    record.outcome = 'refused';
    record.detail = await bodyText(res);
  } else {
    record.outcome = res.status >= 500 ? 'server_error' : 'failure';
    record.detail = `HTTP ${res.status}: ${await bodyText(res)}`;
  }
}

/**
 * The run request as a careful client sends it: with an Idempotency-Key (its tag), and sent again
 * with the same key after a 503 that named no run, as Retry-After says, until the deadline. A
 * retry can start no second run and charge nothing twice (the key returns the first run); the last
 * answer is the one classified.
 */
async function runRequest(ctx: DriveContext, record: RequestRecord, stream: boolean): Promise<Response> {
  const deadline = record.startedAt + REQUEST_DEADLINE_MS;
  for (;;) {
    const res = await fetch(`${ctx.apiUrl}/api/released-app/${ctx.deploymentId}/run`, {
      method: 'POST',
      headers: headers(ctx.apiKey, { 'content-type': 'application/json', 'idempotency-key': record.tag }),
      body: JSON.stringify({ inputs: { tag: record.tag }, stream, ...(stream ? { format: 'sse' } : {}), timeout: RUN_TIMEOUT_SECONDS }),
      signal: AbortSignal.timeout(Math.max(1_000, deadline - Date.now())),
    });
    if (res.status !== 503 || res.headers.get('x-run-id') || Date.now() > deadline - 5_000) return res;
    noteRefusal(record, res);
    record.retries += 1;
    await res.arrayBuffer().catch(() => {});
    const retryAfter = Number(res.headers.get('retry-after'));
    await sleep(Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter, 5) * 1000 : PAUSE_AFTER_REFUSAL_MS);
  }
}

async function jsonRequest(ctx: DriveContext): Promise<RequestRecord> {
  const record = newRecord('json');
  try {
    const res = await runRequest(ctx, record, false);
    if (res.status !== 200) {
      await classify(record, res);
      return record;
    }
    record.status = 200;
    const text = await res.text();
    const result = JSON.parse(text) as { runId?: string; status?: string };
    record.runId = result.runId ?? res.headers.get('x-run-id');
    record.resultStatus = result.status;
    record.outcome = record.runId ? 'ok' : 'failure';
    if (!record.runId) record.detail = `200 without a run id: ${text.slice(0, 200)}`;
  } catch (error) {
    record.outcome = 'failure';
    record.detail = `connection: ${(error as Error).message}${(error as Error).cause ? ` (${String((error as { cause?: Error }).cause?.message ?? (error as Error).cause)})` : ''}`;
  }
  return record;
}

/** The first response of a stream, then resumes with Last-Event-ID until the terminal event or the deadline. */
async function sseRequest(ctx: DriveContext): Promise<RequestRecord> {
  const record = newRecord('sse');
  const deadline = record.startedAt + REQUEST_DEADLINE_MS;
  const onFrame = (frame: Frame) => {
    record.frames.push(frame);
    if (frame.type === 'run_complete' || frame.type === 'run_error') record.terminal = frame.type;
  };
  const read = async (res: Response) => {
    const result = await readFrames(res.body!, onFrame, STREAM_IDLE_MS);
    record.malformedFrames += result.malformed;
    if (result.end === 'idle') {
      record.idleResumes += 1;
      record.idleAt.push({ at: Date.now(), lastId: record.frames.at(-1)?.id ?? null });
    }
    return result;
  };

  try {
    const res = await runRequest(ctx, record, true);
    if (res.status !== 200) {
      await classify(record, res);
      return record;
    }
    record.status = 200;
    record.runId = res.headers.get('x-run-id');
    if (!record.runId) {
      record.detail = '200 stream without x-run-id';
      await res.body?.cancel();
      return record;
    }
    await read(res);
  } catch (error) {
    // No answer at all to the run request: we cannot know whether a run was made (the run row,
    // found by tag, tells at counting time). The API process is never killed, so this is a failure.
    record.detail = `connection: ${(error as Error).message}`;
    return record;
  }

  let lastError = '';
  let resumeServerError: string | undefined;
  while (!record.terminal && Date.now() < deadline) {
    record.resumes += 1;
    const last = record.frames.at(-1);
    try {
      const res = await fetch(`${ctx.apiUrl}/api/runs/${record.runId}/events?format=sse`, {
        headers: headers(ctx.apiKey, last ? { 'last-event-id': String(last.id) } : {}),
        signal: AbortSignal.timeout(Math.max(1_000, deadline - Date.now())),
      });
      if (res.status === 503) {
        record.refusedResumes += 1;
        noteRefusal(record, res);
        await res.arrayBuffer().catch(() => {});
        const retryAfter = Number(res.headers.get('retry-after'));
        await sleep(Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter, 5) * 1000 : 1000);
        continue;
      }
      if (res.status >= 500) {
        // Reported (a 500 is a bug), but the client goes on resuming, so the stream is still checked for gaps.
        resumeServerError ??= `resume answered HTTP ${res.status}: ${await bodyText(res)}`;
        await sleep(1_000);
        continue;
      }
      if (res.status !== 200) {
        record.detail = `resume answered HTTP ${res.status}: ${await bodyText(res)}`;
        return record;
      }
      await read(res);
    } catch (error) {
      lastError = (error as Error).message;
      await sleep(1_000);
    }
  }
  if (resumeServerError) {
    record.outcome = 'server_error';
    record.detail = `${resumeServerError}${record.terminal ? '' : '; the stream never reached its terminal event'}`;
  } else if (record.terminal) {
    record.outcome = 'ok';
  } else {
    record.detail = `the stream never reached its terminal event (${record.resumes} resumes${lastError ? `, last error: ${lastError}` : ''})`;
  }
  return record;
}

export interface Drivers {
  records: RequestRecord[];
  /** Lets every client finish the request it is in (all its resumes), then resolves. */
  stop(): Promise<void>;
}

/** Starts `clients` loops; each request is JSON or SSE at random. */
export function startDrivers(options: { apiUrl: string; apiKey: string; deploymentId: string; clients: number; seed: number }): Drivers {
  const records: RequestRecord[] = [];
  let stopping = false;
  const ctx: DriveContext = options;
  const loop = async (rng: Rng) => {
    while (!stopping) {
      const record = pick(rng, ['json', 'sse'] as const) === 'json' ? await jsonRequest(ctx) : await sseRequest(ctx);
      record.endedAt = Date.now();
      records.push(record);
      if (record.outcome !== 'ok') await sleep(PAUSE_AFTER_REFUSAL_MS);
    }
  };
  const loops = Array.from({ length: options.clients }, (_, i) => loop(seededRng(options.seed * 31 + i + 1)));
  return {
    records,
    async stop() {
      stopping = true;
      await Promise.all(loops);
    },
  };
}
