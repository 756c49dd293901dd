import { rename, rm, writeFile } from 'node:fs/promises';

/**
 * DATA_DIR/runtime.json: where a running `npm start` is and which processes it supervises. The
 * operator CLI reads it to find the embedded database; a chaos test reads it to pick the pids it
 * SIGKILLs and the demo key it runs with, so it changes whenever a child restarts.
 */
export interface RuntimeInfo {
  pid: number;
  apiUrl: string;
  databaseUrl: string;
  temporalAddress: string;
  demo: { apiKey: string; documentId: string; deploymentId: string; teamId: string };
  /** Supervised child processes: null when not ours (external DATABASE_URL / TEMPORAL_ADDRESS, inline worker) or down. */
  children: { postgres: number | null; temporal: number | null; worker: number | null };
}

/**
 * Writes go to a temporary file renamed over the real one, so a reader polling the file never sees
 * half of it; they are chained, so the last write wins when two restarts land together.
 */
export function runtimeFile(file: string) {
  let chain: Promise<void> = Promise.resolve();
  const tmp = `${file}.${process.pid}.tmp`;
  return {
    write(info: RuntimeInfo): Promise<void> {
      chain = chain.catch(() => {}).then(async () => {
        await writeFile(tmp, JSON.stringify(info), { mode: 0o600 });
        await rename(tmp, file);
      });
      return chain;
    },
    async remove(): Promise<void> {
      await chain.catch(() => {});
      await rm(file, { force: true });
    },
  };
}
