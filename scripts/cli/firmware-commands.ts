import { stat } from 'node:fs/promises';
import { z } from 'zod';
import { firmwareFileNameSchema, firmwareModelSchema, firmwareModuleSchema, registerFirmware } from '../../shared/public-config/firmware.js';
import { createObjectStore } from '../../shared/storage/object-store.js';
import type { Command } from './command.js';
import { CliError, readFlags } from './flags.js';

/** asset register-firmware: device firmware the public firmware route hands out (CONTRACTS.md "Public configuration"). */
export const firmwareCommands: Record<string, Command> = {
  'asset register-firmware': async (flags, ctx) => {
    const f = readFlags(flags, {
      model: firmwareModelSchema,
      module: firmwareModuleSchema,
      file: z.string().min(1),
      'file-name': firmwareFileNameSchema,
    });
    const info = await stat(f.file).catch((error: NodeJS.ErrnoException) => {
      throw new CliError('invalid_flag', `Invalid --file: cannot read ${f.file} (${error.code ?? error.message})`);
    });
    if (!info.isFile()) throw new CliError('invalid_flag', `Invalid --file: ${f.file} is not a regular file`);
    const registered = await registerFirmware(
      { db: ctx.db(), store: createObjectStore(ctx.config) },
      { model: f.model, module: f.module, fileName: f['file-name'], file: f.file },
    );
    return { model: registered.model, module: registered.module, fileName: registered.fileName };
  },
};
