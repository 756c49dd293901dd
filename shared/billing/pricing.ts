/**
 * What a run costs, in milli-credits (1000 = 1 credit). Today every run costs a flat base price,
 * charged when the run is created; per-token prices for `llm` blocks join this when that block lands.
 */
export const RUN_BASE_COST_MILLI = 10;
