import type { AppDeps } from '../../api/deps.js';
import type { Comparison } from './measure.js';

// To be written (issue 21): GET /public/client-config with a matching If-None-Match against a bare Fastify route.
export async function benchClientConfig(_deps: AppDeps): Promise<Comparison[]> {
  return [];
}
