/**
 * How often the history service may read its transfer queue, per shard: the queue that hands a new
 * workflow task (a start that is not eager, a signal such as an approval, a timer that fired) to
 * matching, and so to a worker's poll. The server's default is 20 reads a second, so a task waited
 * up to 50 ms for the next read on an otherwise idle server: a no-op workflow started by a client
 * without a worker in its process (the production layout, `START_WORKER=process`) took 50 ms one at
 * a time, 35 of them between WorkflowTaskScheduled and WorkflowTaskStarted; 17.7 ms at this rate
 * (docs/decisions.md "Transfer queue reads"). A read happens only when new tasks were written, and
 * takes every task written since, so under load reads stay batched.
 */
export const TRANSFER_QUEUE_READS_PER_SECOND = 1_000;

/** The setting as dynamic config names it (the dev server's `--dynamic-config-value`, the production server's file). */
export const transferQueueReadsSetting = 'history.transferProcessorMaxPollRPS';
