// The first-byte client of the run-path bench, in its own process like a real client: in the API's
// process the client could read the first bytes only when the server's event loop is free again, so
// server work done after the write (starting the workflow) would count as time to first byte.
// Input: one JSON argument; output: one JSON line with the sorted samples of each URL (ms).

interface Target { url: string; headers: Record<string, string> }
const { targets, body, samples, pauseMs } = JSON.parse(process.argv[2]!) as { targets: Target[]; body: string; samples: number; pauseMs: number };

/** Milliseconds until the first chunk of the body; the rest is read (a run, to its end) before the next sample. */
async function firstByte({ url, headers }: Target): Promise<number> {
  const t = performance.now();
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const reader = res.body!.getReader();
  await reader.read();
  const elapsed = performance.now() - t;
  while (!(await reader.read()).done) { /* drain */ }
  return elapsed;
}

// Interleaved, so every target is sampled under the same conditions.
const results: number[][] = targets.map(() => []);
for (let i = 0; i < samples; i++) {
  for (const [index, target] of targets.entries()) {
    await new Promise((r) => setTimeout(r, pauseMs));
    results[index]!.push(await firstByte(target));
  }
}
console.log(JSON.stringify(results.map((r) => r.sort((a, b) => a - b))));
