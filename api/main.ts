// Production entry of the API: `npm run api` (needs DATABASE_URL and TEMPORAL_ADDRESS).
import closeWithGrace from 'close-with-grace';
import { loadProductionConfigOrExit } from '../shared/config.js';
import { buildApp } from './app.js';
import { connectAppDeps } from './connect-deps.js';

const { config, targets } = loadProductionConfigOrExit();
const deps = await connectAppDeps(config, targets, (m) => console.warn(m));
const app = await buildApp(deps);

// On SIGTERM/SIGINT: stop accepting, let in-flight requests finish (up to the grace delay), then
// release connections. A second signal, or the delay running out, exits at once.
closeWithGrace({ delay: config.SHUTDOWN_GRACE_MS }, async ({ signal, err }) => {
  if (err) app.log.error({ err }, 'shutting down after an uncaught error');
  else app.log.info({ signal }, 'shutting down');
  await app.close();
  await deps.close();
});

await app.listen({ port: config.PORT, host: config.HOST });
