import { CronExpressionParser, type CronExpression } from 'cron-parser';

// Cron expressions of spec §2.1: 5 fields (minute hour day month weekday) or 6 with leading seconds.
// Parsed and expanded by cron-parser; compiled here to Temporal's structured calendar spec, so
// seconds, timezones and the day-of-month OR day-of-week rule behave as the expression says.

export class CronError extends Error {}

/** One `*`, value or NAME, optional `-end`, optional `/step`; a list of those. No L, W, #, ? or H. */
const VALUE = '(?:\\d+|[A-Za-z]{3})';
const ITEM = `(?:\\*|${VALUE}(?:-${VALUE})?)(?:/\\d+)?`;
const FIELD = new RegExp(`^${ITEM}(?:,${ITEM})*$`);

export interface ParsedCron {
  /** The expression with 6 fields (a 5-field one gets second 0). */
  expression: CronExpression;
  fields: { second: number[]; minute: number[]; hour: number[]; dayOfMonth: number[]; month: number[]; dayOfWeek: number[] };
  /** Both day fields restricted: a day matches when either matches (classic cron). */
  daysEitherMatch: boolean;
}

export function isValidTimezone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/** Throws CronError for anything but a well-formed 5- or 6-field expression that fires at least once. */
export function parseCron(cron: string, timezone = 'UTC', currentDate: Date = new Date()): ParsedCron {
  const parts = cron.trim().split(/\s+/);
  if (parts.length !== 5 && parts.length !== 6) throw new CronError(`expected 5 or 6 fields, got ${cron.trim() === '' ? 0 : parts.length}`);
  const bad = parts.find((p) => !FIELD.test(p));
  if (bad !== undefined) throw new CronError(`unsupported field '${bad}'`);
  const six = parts.length === 6 ? parts : ['0', ...parts];
  let expression: CronExpression;
  try {
    expression = CronExpressionParser.parse(six.join(' '), { tz: timezone, currentDate });
    // An expression that can never fire (e.g. 30 February) fails here rather than at run time.
    expression.next();
    expression.reset(currentDate);
  } catch (error) {
    throw new CronError((error as Error).message);
  }
  const f = expression.fields;
  const dayOfWeek = [...new Set(f.dayOfWeek.values.map((d) => Number(d) % 7))].sort((a, b) => a - b);
  return {
    expression,
    fields: {
      second: f.second.values.map(Number), minute: f.minute.values.map(Number), hour: f.hour.values.map(Number),
      dayOfMonth: f.dayOfMonth.values.map(Number), month: f.month.values.map(Number), dayOfWeek,
    },
    daysEitherMatch: !f.dayOfMonth.isWildcard && !f.dayOfWeek.isWildcard,
  };
}

/**
 * The shortest gap, in seconds, between the next `count` fire times in the schedule's timezone
 * (so DST shifts count). Infinity when it fires once at most.
 */
export function shortestInterval(cron: string, timezone: string, count = 60, from: Date = new Date()): number {
  const { expression } = parseCron(cron, timezone, from);
  let previous: number | null = null;
  let shortest = Infinity;
  for (let i = 0; i < count && expression.hasNext(); i += 1) {
    const at = expression.next().getTime();
    if (previous !== null) shortest = Math.min(shortest, (at - previous) / 1000);
    previous = at;
  }
  return shortest;
}

export interface NumberRange { start: number; end: number; step: number }

/** Sorted values as arithmetic runs: [0,2,4,…,58] → [{ start: 0, end: 58, step: 2 }]. */
export function toRanges(values: number[]): NumberRange[] {
  const ranges: NumberRange[] = [];
  let i = 0;
  while (i < values.length) {
    const start = values[i]!;
    if (i + 1 >= values.length) {
      ranges.push({ start, end: start, step: 1 });
      break;
    }
    const step = values[i + 1]! - start;
    let j = i + 1;
    while (j + 1 < values.length && values[j + 1]! - values[j]! === step) j += 1;
    ranges.push({ start, end: values[j]!, step });
    i = j + 1;
  }
  return ranges;
}
