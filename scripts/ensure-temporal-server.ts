// Makes sure the production Temporal server, its SQL tool and the UI server are built and cached
// (temporal/production-server.ts), so `npm run topology` and its test do not pay for the build.
// Used by .ci/run; the topology builds them itself when missing.
import { ensureTemporalServerBuild } from '../temporal/production-server.js';

const startedAt = performance.now();
const build = await ensureTemporalServerBuild((line) => console.log(line));
console.log(`Temporal server: ${build.server}, UI server: ${build.uiServer} (${((performance.now() - startedAt) / 1000).toFixed(0)} s)`);
