import { z } from 'zod';

// A run's callback as a caller asks for it (CONTRACTS.md "Long runs", docs/long-runs.md): where to
// POST, and which of the run's events. The URL itself is vetted by callback-url.ts.

/** The events a callback may select; the two terminal ones are the default. */
export const CALLBACK_EVENT_TYPES = ['run_complete', 'run_error', 'block_waiting'] as const;
export type CallbackEventType = (typeof CALLBACK_EVENT_TYPES)[number];
export const DEFAULT_CALLBACK_EVENTS: readonly CallbackEventType[] = ['run_complete', 'run_error'];

export const runCallbackBody = z.object({
  url: z.string().min(1).max(2048).describe('http(s) URL the run\'s events are POSTed to; refused like an `http` block\'s (400 invalid_callback_url)'),
  events: z.array(z.enum(CALLBACK_EVENT_TYPES)).min(1).max(CALLBACK_EVENT_TYPES.length).optional()
    .describe('default: run_complete and run_error'),
}).describe('Standard Webhooks signed POSTs of the run\'s events (docs/long-runs.md)');

/** A vetted callback as the run workflow carries it (`AppRunInput.callback`). */
export interface RunCallback {
  url: string;
  events: CallbackEventType[];
}

/** `mode: "background"`: 202 at once; the caller follows the run by its URLs or its callback. */
export const runModeField = z.enum(['background']).optional().describe('`background`: answer 202 `{ runId, status: "queued", statusUrl, eventsUrl }` at once');

/** The 202 of a background run. */
export const backgroundRunView = z.object({
  runId: z.uuid(), status: z.literal('queued'), statusUrl: z.string(), eventsUrl: z.string(),
});

export const backgroundRunAnswer = (runId: string): z.infer<typeof backgroundRunView> => ({
  runId, status: 'queued', statusUrl: `/runs/${runId}`, eventsUrl: `/api/runs/${runId}/events`,
});
