// Preloaded into the workflow sandbox (worker/bundle.ts) before the SDK freezes its globals.
//
// The SDK's promise hook records a stack trace for every promise workflow code creates (for the
// Temporal UI's "Stack Trace" query): V8 captures `Error.stackTraceLimit` frames and the SDK maps
// each through the bundle's source map. At the default 10 frames that was a third of the workflow
// thread's time on the demo app; at 3 the run path's workflow CPU fell from about 4.6 to 3.3 ms a
// run (docs/decisions.md). Three frames still name where an error in workflow code was thrown and
// its two callers; activity errors keep their full stacks (they are made outside the sandbox).
// The app-runs worker records no trace per promise at all (worker/create-workers.ts); the limit
// still serves the other queues' workers and every error stack.
Error.stackTraceLimit = 3;

export {};
