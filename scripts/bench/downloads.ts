import type { AppDeps } from '../../api/deps.js';
import type { Comparison } from './measure.js';

// To be written (issue 21): a 64 MiB board asset, whole and in 1 MiB ranges, 16 concurrent, against nginx.
export async function benchDownloads(_deps: AppDeps, _workDir: string): Promise<{ rows: Comparison[]; lines: string[] }> {
  return { rows: [], lines: [] };
}
