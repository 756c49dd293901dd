import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import type { TestStack } from './stack.js';

/** Runs `body` with a site setting set, then removes it again (its default applies), whatever happens. */
export async function withSetting(stack: TestStack, key: string, value: unknown, body: () => Promise<void>): Promise<void> {
  await upsertSiteSetting(stack.db, key, value);
  stack.deps.settings.invalidate();
  try {
    await body();
  } finally {
    await stack.db.deleteFrom('site_settings').where('key', '=', key).execute();
    stack.deps.settings.invalidate();
  }
}
