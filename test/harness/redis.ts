import { spawn } from 'node:child_process';
import { createServer } from 'node:net';

const REDIS_SERVER = '/usr/bin/redis-server';

const freePort = () => new Promise<number>((resolve, reject) => {
  const server = createServer();
  server.once('error', reject);
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    server.close(() => resolve(port));
  });
});

/**
 * A throwaway Debian `redis-server` on a free 127.0.0.1 port, without persistence; never the
 * machine's own Redis on 6379. `stop()` ends exactly the process it started.
 */
export async function startRedis(): Promise<{ url: string; port: number; stop(): Promise<void> }> {
  const port = await freePort();
  const child = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`redis-server did not start on ${port}: ${output}`)), 10_000);
    const exited = (code: number | null) => { clearTimeout(timer); reject(new Error(`redis-server exited with ${code}: ${output}`)); };
    child.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(error.code === 'ENOENT'
        ? new Error(`redis-server is required at ${REDIS_SERVER} for the release rate-limit tests. npm test installs it (scripts/ensure-test-dependencies.ts) when it runs as root or with passwordless sudo; otherwise run: sudo apt-get update && sudo apt-get install -y redis-server`)
        : error);
    });
    child.once('exit', exited);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer);
        child.removeListener('exit', exited);
        resolve();
      }
    });
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: () => new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    }),
  };
}
