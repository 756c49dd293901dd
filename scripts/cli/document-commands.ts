import { z } from 'zod';
import { defineCommand, flag, type Command } from './command.js';
import { readJsonFile, uuidFlag } from './flags.js';

/**
 * `document create` and `document publish` (CONTRACTS.md): the editor API's service acting as the
 * operator, so the same graph validation and versioning apply, without permission checks. The
 * services load when their command runs (graph validation and Temporal's client would slow every
 * other command's start).
 */
export const documentCommands: Record<string, Command> = {
  'document create': defineCommand({
    summary: 'Create a workflow document in a project from a graph file (validated as the editor API does)',
    prints: '{ id }',
    flags: {
      project: flag(uuidFlag, 'the project', 'PROJECT_ID'),
      name: flag(z.string().trim().min(1).max(200), 'document name', 'N'),
      graph: flag(z.string().min(1), 'a JSON file holding the graph (CONTRACTS.md "Workflow graph format")', 'FILE.json'),
    },
    run: async (f, ctx) => {
      const graph = await readJsonFile('graph', f.graph);
      const { createDocument } = await import('../../shared/documents/service.js');
      const document = await createDocument(ctx.db(), { kind: 'operator' }, { projectId: f.project, name: f.name, graph });
      return { id: document.id };
    },
  }),

  'document publish': defineCommand({
    summary: 'Publish a document as a new deployment',
    prints: '{ deploymentId, version }',
    flags: {
      document: flag(uuidFlag, 'the document', 'DOCUMENT_ID'),
      version: flag(z.string().optional(), 'version (default: the next minor after the newest)', 'V'),
      visibility: flag(z.enum(['private', 'public']).optional(), 'who may run it (default private)'),
    },
    run: async (f, ctx) => {
      const { publishDocument } = await import('../../shared/publishing/service.js');
      const deployment = await publishDocument(ctx.db(), { kind: 'operator' }, f.document, { version: f.version, visibility: f.visibility });
      return { deploymentId: deployment.id, version: deployment.version };
    },
  }),
};
