// Makes sure a Temporal CLI is available (building and caching it with Go when needed), so the
// first `npm start` or `npm test` on a fresh machine does not pay for the build. Used by .ci/run.
import { resolveTemporalCli } from '../temporal/cli-binary.js';

const source = await resolveTemporalCli((line) => console.log(line));
if (source.kind === 'binary') console.log(`Temporal CLI: ${source.path} (${source.origin})`);
else console.log('No Temporal CLI binary: the dev server will come from the @temporalio/testing download');
