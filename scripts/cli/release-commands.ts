import { z } from 'zod';
import { defineCommand, flag, type Command } from './command.js';
import { jsonFlag, readJsonFile, uuidFlag } from './flags.js';

/**
 * `release create` and `release publish` (docs/releases.md): the management API's service acting
 * as the operator, so the same alias, config and endpoint validation apply, without permission checks.
 * The service loads when its command runs (its config validation would slow every other command's start).
 */
export const releaseCommands: Record<string, Command> = {
  'release create': defineCommand({
    summary: "Create a project's release (a gateway alias for its endpoints)",
    prints: '{ id, alias, gatewayPath }',
    flags: {
      project: flag(uuidFlag, 'the project', 'PROJECT_ID'),
      alias: flag(z.string().min(1), 'the alias in its gateway path', 'A'),
      config: flag(jsonFlag.optional(), 'release config as JSON', 'JSON'),
      'anonymous-api-key': flag(uuidFlag.optional(), 'API key anonymous callers run as', 'API_KEY_ID'),
    },
    run: async (f, ctx) => {
      const { createRelease } = await import('../../shared/releases/service.js');
      const release = await createRelease(ctx.db(), { kind: 'operator' }, {
        projectId: f.project, alias: f.alias, config: f.config, anonymousApiKeyId: f['anonymous-api-key'],
      });
      return { id: release.id, alias: release.alias, gatewayPath: release.gatewayPath };
    },
  }),

  'release publish': defineCommand({
    summary: 'Publish a version of a release from an endpoints file',
    prints: '{ releaseId, version }',
    flags: {
      release: flag(uuidFlag, 'the release', 'RELEASE_ID'),
      endpoints: flag(z.string().min(1), 'a JSON file holding the endpoints (docs/releases.md)', 'FILE.json'),
      version: flag(z.string().optional(), 'version (default: the next after the newest)', 'V'),
    },
    run: async (f, ctx) => {
      const endpoints = await readJsonFile('endpoints', f.endpoints);
      const { publishReleaseVersion } = await import('../../shared/releases/service.js');
      const version = await publishReleaseVersion(ctx.db(), { kind: 'operator' }, f.release, { version: f.version, endpoints });
      return { releaseId: version.releaseId, version: version.version };
    },
  }),
};
