// Production entry of the API: `npm run api` (needs DATABASE_URL and TEMPORAL_ADDRESS).
import closeWithGrace from 'close-with-grace';
import { ConfigError, loadConfig, requireProductionTargets } from '../shared/config.js';
import { buildApp } from './app.js';
import { connectAppDeps } from './connect-deps.js';

let config, targets;
try {
  config = loadConfig();
  targets = requireProductionTargets(config);
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(error.message); // a configuration mistake needs its message, not a stack trace
  process.exit(2);
}
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
