import { stat } from 'node:fs/promises';
import { z } from 'zod';
import { BOARD_CHANNELS, BOARD_PLATFORMS, boardFileNameProblem, registerBoardAsset } from '../../shared/public-config/board-assets.js';
import { defineCommand, flag, type Command } from './command.js';
import { CliError } from './flags.js';

/**
 * `asset register` (CONTRACTS.md "Public configuration"): stores a board firmware (`--channel`) or
 * board app installer (`--platform`) in the object store and registers it; prints
 * `{ sha256, size, path }`, `path` being its public download path.
 */
export const assetCommands: Record<string, Command> = {
  'asset register': defineCommand({
    summary: 'Store a board firmware or board app installer and register it as a public download',
    prints: '{ sha256, size, path }',
    flags: {
      kind: flag(z.enum(['board-firmware', 'board-app']), 'what the file is'),
      channel: flag(z.enum(BOARD_CHANNELS).optional(), 'release channel (board-firmware only, and then required)'),
      platform: flag(z.enum(BOARD_PLATFORMS).optional(), 'platform (board-app only, and then required)'),
      file: flag(z.string().min(1), 'the file to upload', 'PATH'),
      'file-name': flag(z.string().min(1), 'the name it is downloaded as', 'NAME'),
    },
    run: async (f, ctx) => {
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
  }),
};
