import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const cliEntry = fileURLToPath(new URL('../../scripts/cli.ts', import.meta.url));

export interface CliResult { code: number; stdout: string; stderr: string; json: Record<string, unknown> | null; error: Record<string, unknown> | null }

/** Runs the operator CLI as an operator would (a separate process), against the given environment. */
export function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', cliEntry, ...args], { env, timeout: 30_000 }, (error, stdout, stderr) => {
      const parse = (text: string) => {
        const line = text.trim().split('\n').at(-1) ?? '';
        try { return JSON.parse(line) as Record<string, unknown>; } catch { return null; }
      };
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr, json: parse(stdout), error: parse(stderr) });
    });
  });
}
