import type { ApiSchemaField, InputValueType } from '../documents/graph.js';

export interface InputProblem { field: string; message: string }

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function typeProblem(valueType: InputValueType, value: unknown): string | null {
  switch (valueType) {
    case 'string': return typeof value === 'string' ? null : 'expected a string';
    case 'number': return typeof value === 'number' && Number.isFinite(value) ? null : 'expected a number';
    case 'boolean': return typeof value === 'boolean' ? null : 'expected a boolean';
    case 'object': return isPlainObject(value) ? null : 'expected an object';
    case 'array': return Array.isArray(value) ? null : 'expected an array';
    case 'pdf':
      return typeof value === 'string' || (isPlainObject(value) && value._type === 'pdf' && typeof value.value === 'string')
        ? null : "expected { _type: 'pdf', value: <file handle, data: URI or base64> }";
    case 'file': return typeof value === 'string' ? null : 'expected a file handle';
  }
}

/**
 * §4.1 rules 1–3: only the inputs the published schema lists (the ones the graph reads) are
 * checked, matched by name or block id; unknown keys are ignored; `_trigger` is never the caller's.
 */
export function validateRunInputs(schema: { inputs: ApiSchemaField[] }, inputs: Record<string, unknown>): InputProblem[] {
  const problems: InputProblem[] = [];
  for (const field of schema.inputs) {
    const value = inputs[field.name] ?? inputs[field.blockId];
    if (value === undefined || value === null) {
      if (field.required && field.default === undefined) problems.push({ field: `inputs.${field.name}`, message: 'is required' });
      continue;
    }
    const problem = typeProblem(field.valueType, value);
    if (problem) problems.push({ field: `inputs.${field.name}`, message: problem });
  }
  return problems;
}

/** The server always sets `_trigger`, overwriting whatever the caller sent. */
export function withTrigger(inputs: Record<string, unknown>, trigger: { source: string } & Record<string, unknown>, now: Date): Record<string, unknown> {
  return { ...inputs, _trigger: { ...trigger, triggered_at: now.toISOString() } };
}
