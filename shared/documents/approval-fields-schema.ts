import { Ajv, type ValidateFunction } from 'ajv';
import { LRUCache } from 'lru-cache';

// The `fields` of an `approval` block: a JSON Schema of the data an approver adds (docs/long-runs.md).
// Checked when the graph is saved (it must compile) and against every decision's `data`. Strict mode:
// an unknown keyword is a mistake in the schema, refused at save rather than ignored at decision time.

const ajv = new Ajv({ strict: true, allErrors: true });
const compiled = new LRUCache<string, ValidateFunction>({ max: 500 });

function compile(fields: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(fields);
  let validate = compiled.get(key);
  if (!validate) {
    validate = ajv.compile(fields);
    compiled.set(key, validate);
  }
  return validate;
}

/** Why `fields` is not a usable schema of an object of data, or null when it is. */
export function fieldsSchemaProblem(fields: Record<string, unknown>): string | null {
  if (fields.type !== undefined && fields.type !== 'object') return `fields: the data is an object, so type must be 'object' (got ${JSON.stringify(fields.type)})`;
  try {
    compile(fields);
    return null;
  } catch (error) {
    return `fields is not a valid JSON Schema: ${(error as Error).message}`;
  }
}

/** What is wrong with an approver's `data` under `fields` (empty when it matches, or when there is no schema). */
export function dataProblems(fields: Record<string, unknown> | null, data: unknown): string[] {
  if (!fields) return [];
  const validate = compile(fields);
  if (validate(data)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || 'data'} ${e.message ?? 'is invalid'}`.trim());
}
