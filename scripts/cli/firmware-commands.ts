import { stat } from 'node:fs/promises';
import { z } from 'zod';
import { firmwareFileNameSchema, firmwareModelSchema, firmwareModuleSchema, registerFirmware } from '../../shared/public-config/firmware.js';
import { createObjectStore } from '../../shared/storage/object-store.js';
import { defineCommand, flag, type Command } from './command.js';
import { CliError } from './flags.js';

/** asset register-firmware: device firmware the public firmware route hands out (CONTRACTS.md "Public configuration"). */
export const firmwareCommands: Record<string, Command> = {
  'asset register-firmware': defineCommand({
    summary: 'Store and register device firmware that the public firmware route hands out',
    prints: '{ model, module, fileName }',
    flags: {
      model: flag(firmwareModelSchema, 'the device model', 'MODEL'),
      module: flag(firmwareModuleSchema, 'the firmware module', 'MODULE'),
      file: flag(z.string().min(1), 'the file to upload', 'PATH'),
      'file-name': flag(firmwareFileNameSchema, 'the name it is downloaded as', 'NAME'),
    },
    run: async (f, ctx) => {
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
  }),
};
