import type { Client } from '@temporalio/client';
import type { buildApp } from '../../api/app.js';
import type { Database } from '../../shared/db/client.js';
import type { SiteSettingsCache } from '../../shared/site-settings/cache.js';

/** What scripts/capture-workflow-histories.ts hands each capability's capture: its stack, a signed-in owner's project, and `save`. */
export interface CaptureDeps {
  db: Database;
  app: Awaited<ReturnType<typeof buildApp>>;
  client: Client;
  jwt: string;
  projectId: string;
  settings: SiteSettingsCache;
  taskQueueSuffix?: string;
  wanted(name: string): boolean;
  save(name: string, workflowId: string): Promise<void>;
}
