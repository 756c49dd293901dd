import type { ActivityDeps } from './deps.js';
import { createAppRunActivities } from './app-runs/run-events.js';
import { createPlatformActivities } from './platform/probes.js';

export type { ActivityDeps } from './deps.js';

/** Every activity of the service, with its dependencies injected. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createPlatformActivities(deps),
    ...createAppRunActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
