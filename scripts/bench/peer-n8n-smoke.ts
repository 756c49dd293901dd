// `node --import tsx scripts/bench/peer-n8n-smoke.ts`: n8n as the bench's peer, started, measured
// with a shorter load than the bench's, and stopped; prints the figures as JSON.
import { measureService } from './npm-start.js';
import { startN8n } from './peer-n8n.js';

const service = await startN8n();
try {
  const figures = await measureService(service, { connections: 50, warmupSeconds: 3, seconds: 10, sequentialSeconds: 5, floorRounds: 0, floorSeconds: 0 });
  console.log(JSON.stringify({ name: service.name, ...figures }, null, 2));
} finally {
  await service.stop();
}
