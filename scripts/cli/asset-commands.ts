import { stat } from 'node:fs/promises';
import { z } from 'zod';
import { BOARD_CHANNELS, BOARD_PLATFORMS, boardFileNameProblem, registerBoardAsset } from '../../shared/public-config/board-assets.js';
import type { Command } from './command.js';
import { CliError, readFlags } from './flags.js';

/**
 * `asset register` (CONTRACTS.md "Public configuration"): stores a board firmware (`--channel`) or
 * board app installer (`--platform`) in the object store and registers it; prints
 * `{ sha256, size, path }`, `path` being its public download path.
 */
export const assetCommands: Record<string, Command> = {
  'asset register': async (flags, ctx) => {
    const f = readFlags(flags, {
      kind: z.enum(['board-firmware', 'board-app']),
      channel: z.enum(BOARD_CHANNELS).optional(),
      platform: z.enum(BOARD_PLATFORMS).optional(),
      file: z.string().min(1),
      'file-name': z.string().min(1),
    });
    const [needed, refused] = f.kind === 'board-firmware' ? ['channel', 'platform'] as const : ['platform', 'channel'] as const;
    const target = f[needed];
    if (target === undefined) throw new CliError('missing_flag', `Missing required flag --${needed} (for --kind ${f.kind})`);
    if (f[refused] !== undefined) throw new CliError('invalid_flag', `Invalid --${refused}: --kind ${f.kind} takes --${needed}`);
    const problem = boardFileNameProblem(f.kind, target, f['file-name']);
    if (problem) throw new CliError('invalid_flag', `Invalid --file-name: ${problem}`);
    const info = await stat(f.file).catch((error: NodeJS.ErrnoException) => {
      throw new CliError('invalid_flag', `Invalid --file: cannot read ${f.file} (${error.code ?? error.message})`);
    });
    if (!info.isFile()) throw new CliError('invalid_flag', `Invalid --file: ${f.file} is not a file`);
    return registerBoardAsset({ db: ctx.db(), config: ctx.config }, { kind: f.kind, target, filePath: f.file, fileName: f['file-name'] });
  },
};
