import { z } from 'zod';
import { createDocument } from '../../shared/documents/service.js';
import { publishDocument } from '../../shared/publishing/service.js';
import type { Command } from './command.js';
import { readFlags, readJsonFile, uuidFlag } from './flags.js';

/**
 * `document create` and `document publish` (CONTRACTS.md): the editor API's service acting as the
 * operator, so the same graph validation and versioning apply, without permission checks.
 */
export const documentCommands: Record<string, Command> = {
  'document create': async (flags, ctx) => {
    const f = readFlags(flags, { project: uuidFlag, name: z.string().trim().min(1).max(200), graph: z.string().min(1) });
    const graph = await readJsonFile('graph', f.graph);
    const document = await createDocument(ctx.db(), { kind: 'operator' }, { projectId: f.project, name: f.name, graph });
    return { id: document.id };
  },

  'document publish': async (flags, ctx) => {
    const f = readFlags(flags, { document: uuidFlag, version: z.string().optional(), visibility: z.enum(['private', 'public']).optional() });
    const deployment = await publishDocument(ctx.db(), { kind: 'operator' }, f.document, { version: f.version, visibility: f.visibility });
    return { deploymentId: deployment.id, version: deployment.version };
  },
};
