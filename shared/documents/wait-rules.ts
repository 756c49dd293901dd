// Pure rules of the blocks that pause a run (`wait`, `approval`; docs/long-runs.md), shared by the
// checks at save and publish (shared/documents/wait-block-rules.ts) and the run workflow, which
// applies them again to values its templates render. No I/O, no dependencies: safe in workflow code.

/** `runs.max_wait_seconds`' default: 30 days. */
export const DEFAULT_MAX_WAIT_SECONDS = 2_592_000;

// A date, a time with a zone: what `until` must be once rendered (a time without a zone is ambiguous).
const ISO_8601_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$/i;

/** Milliseconds since the epoch of an ISO 8601 time with a zone, or null when it is not one. */
export function parseIsoTime(text: string): number | null {
  const trimmed = text.trim();
  if (!ISO_8601_TIME.test(trimmed)) return null;
  const ms = Date.parse(trimmed);
  return Number.isFinite(ms) ? ms : null;
}

/** A config string with a `{{…}}` reference: its value is known only at run time. */
export const isTemplateText = (text: string): boolean => /\{\{.*\}\}/s.test(text);

/** A number of seconds given as a number or a numeric string; null otherwise. */
export function secondsOf(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'string' && /^\s*\d+(?:\.\d+)?\s*$/.test(value)) return Number(value);
  return null;
}

export type WaitProblem = { kind: 'invalid'; message: string } | { kind: 'over_cap'; message: string };

/**
 * How long a `wait` block waits, from its rendered config: at most `maxWaitSeconds`. An `until` in
 * the past waits no time (a template may render a time that has just passed); one that is not an
 * ISO 8601 time, or a wait over the cap, is a problem.
 */
export function waitDuration(config: { seconds?: unknown; until?: unknown }, nowMs: number, maxWaitSeconds: number):
  { seconds: number; untilMs: number } | WaitProblem {
  let seconds: number;
  if (config.until !== undefined) {
    const untilMs = typeof config.until === 'string' ? parseIsoTime(config.until) : null;
    if (untilMs === null) return { kind: 'invalid', message: `until '${String(config.until)}' is not an ISO 8601 time with a zone (e.g. 2030-01-01T09:00:00Z)` };
    seconds = Math.max(0, (untilMs - nowMs) / 1000);
  } else {
    const given = secondsOf(config.seconds);
    if (given === null || given < 0) return { kind: 'invalid', message: `seconds '${String(config.seconds)}' is not a number of seconds` };
    seconds = given;
  }
  if (seconds > maxWaitSeconds) return { kind: 'over_cap', message: `a wait of ${Math.ceil(seconds)} seconds is over the cap of ${maxWaitSeconds} (runs.max_wait_seconds)` };
  return { seconds, untilMs: nowMs + seconds * 1000 };
}
