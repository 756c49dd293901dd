// Workflows the benchmarks use as floors (bundled by the bench only, never by the service's worker).

/** The least a Temporal run can do: start, one workflow task, complete. */
export async function noopWorkflow(value: string): Promise<string> {
  return value;
}
