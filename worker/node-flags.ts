/**
 * Node flags of the worker when it runs as its own process: `npm run worker` (package.json),
 * `START_WORKER=process` and `npm run topology` (scripts/dev/worker-process.ts), docker-compose's
 * worker command and the bench's worker; test/platform/compose.test.ts holds them to this list.
 *
 * They keep the heap near what is live instead of what V8 lets grow before it collects (issue 44):
 * after 1,500 runs began waiting, the main isolate held 135 MB of old space of which 50 MB was live,
 * and each isolate (main and workflow thread) grows its young generation to 32 MB under load.
 * - `--max-semi-space-size=4`: young generation of at most 8 MB per isolate.
 * - `--heap-growing-percent=20`: the next full collection when the old space is 1.2× what the last
 *   one left (V8 otherwise picks up to 4× on a heap limit as large as this machine gives).
 * Worker RSS at rest 278–295 → 252 MB, and 341–409 → 272–295 MB with 1,500 runs waiting (compiled
 * worker, 50%); under tsx with 10,000 waiting 262–316 MB at 50%, 253–298 MB at 20%, with callbacks'
 * first attempt p99 183–198 ms against 118–141 (docs/decisions.md "The worker's memory").
 */
export const WORKER_NODE_FLAGS = ['--max-semi-space-size=4', '--heap-growing-percent=20'] as const;
