import { z } from 'zod';
import { createRelease, publishReleaseVersion } from '../../shared/releases/service.js';
import type { Command } from './command.js';
import { jsonFlag, readFlags, readJsonFile, uuidFlag } from './flags.js';

/**
 * `release create` and `release publish` (docs/releases.md): the management API's service acting
 * as the operator, so the same alias, config and endpoint validation apply, without permission checks.
 */
export const releaseCommands: Record<string, Command> = {
  'release create': async (flags, ctx) => {
    const f = readFlags(flags, { project: uuidFlag, alias: z.string().min(1), config: jsonFlag.optional(), 'anonymous-api-key': uuidFlag.optional() });
    const release = await createRelease(ctx.db(), { kind: 'operator' }, {
      projectId: f.project, alias: f.alias, config: f.config, anonymousApiKeyId: f['anonymous-api-key'],
    });
    return { id: release.id, alias: release.alias, gatewayPath: release.gatewayPath };
  },

  'release publish': async (flags, ctx) => {
    const f = readFlags(flags, { release: uuidFlag, endpoints: z.string().min(1), version: z.string().optional() });
    const endpoints = await readJsonFile('endpoints', f.endpoints);
    const version = await publishReleaseVersion(ctx.db(), { kind: 'operator' }, f.release, { version: f.version, endpoints });
    return { releaseId: version.releaseId, version: version.version };
  },
};
