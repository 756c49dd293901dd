import { findActiveProject } from '../../shared/identity/repository.js';
import { newId } from '../../shared/ids.js';
import { readGraphConfig } from '../../shared/project-graph/config.js';
import { SiteSettingsCache } from '../../shared/site-settings/cache.js';
import { createFileStore } from '../../shared/storage/index.js';
import { defineCommand, flag, type Command } from './command.js';
import { CliError, uuidFlag } from './flags.js';

/** graph build: a memory generation of the project's sources, made the active one (CONTRACTS.md "Project graph"). */
export const graphCommands: Record<string, Command> = {
  'graph build': defineCommand({
    summary: "Build a memory generation of a project's sources and make it the active one",
    prints: '{ generationId, facts }',
    flags: { project: flag(uuidFlag, 'the project', 'PROJECT_ID') },
    run: async (f, ctx) => {
      if (!(await findActiveProject(ctx.db(), f.project))) throw new CliError('not_found', `Project ${f.project} does not exist`);
      // Built here, not through a worker: the operator sees the generation when the command returns.
      // Works whether or not graph.config is on, so memory can be ready before the feature opens.
      // With graph.config `embeddingModel` (and LLM_BASE_URL), the facts are embedded; a failing provider fails the command.
      // Loaded here: the builder and its HTTP client would slow every other command's start.
      const { buildGeneration } = await import('../../shared/project-graph/build.js');
      const { graphEmbedder } = await import('../../shared/project-graph/embeddings.js');
      const embedder = graphEmbedder(await readGraphConfig(new SiteSettingsCache(ctx.db()), ctx.config), ctx.config);
      const { generationId, facts } = await buildGeneration(ctx.db(), { projectId: f.project, buildKey: `cli:${newId()}`, store: createFileStore(ctx.config), embedder });
      return { generationId, facts };
    },
  }),
};
