/** The default `billing.rules.runBaseMilli` (docs/billing.md): what a run costs unless a test sets the rules. */
export const RUN_BASE_COST_MILLI = 10;
