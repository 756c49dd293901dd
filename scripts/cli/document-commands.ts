import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { createDocument, publishDocument } from '../../shared/app-runs/documents/service.js';
import type { Command } from './commands.js';
import { CliError, readFlags, uuidFlag } from './flags.js';

/** The graph file's JSON; a missing, unreadable or non-JSON file is a usage error naming --graph. */
async function readGraphFile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new CliError('invalid_flag', `Invalid --graph: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new CliError('invalid_flag', `Invalid --graph: ${file} is not valid JSON (${(error as Error).message})`);
  }
}

/**
 * `document create` and `document publish` (CONTRACTS.md): the editor API's service acting as the
 * operator, so the same graph validation and versioning apply, without permission checks.
 */
export const documentCommands: Record<string, Command> = {
  'document create': async (flags, ctx) => {
    const f = readFlags(flags, { project: uuidFlag, name: z.string().trim().min(1).max(200), graph: z.string().min(1) });
    const graph = await readGraphFile(f.graph);
    const document = await createDocument(ctx.db(), { kind: 'operator' }, { projectId: f.project, name: f.name, graph });
    return { id: document.id };
  },

  'document publish': async (flags, ctx) => {
    const f = readFlags(flags, { document: uuidFlag, version: z.string().optional(), visibility: z.enum(['private', 'public']).optional() });
    const deployment = await publishDocument(ctx.db(), { kind: 'operator' }, f.document, { version: f.version, visibility: f.visibility });
    return { deploymentId: deployment.id, version: deployment.version };
  },
};
