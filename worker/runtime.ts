import { Runtime, type LogLevel, type LogMetadata, type Logger } from '@temporalio/worker';
import { pino, type Level } from 'pino';
import type { Config } from '../shared/config.js';

// The Temporal SDK's own logs (its Rust core's and the TypeScript worker's: "Worker state changed",
// "No Nexus services registered") go through the same pino logger and the same LOG_LEVEL as the
// API's lines, JSON like them. Without this the SDK prints its INFO lines to the console whatever
// LOG_LEVEL says, between `npm start`'s own lines.

const sdkLevels: Record<Config['LOG_LEVEL'], LogLevel> = {
  trace: 'TRACE', debug: 'DEBUG', info: 'INFO', warn: 'WARN', error: 'ERROR', fatal: 'ERROR', silent: 'ERROR',
};
const pinoLevels: Record<LogLevel, Level> = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' };

/** A Temporal SDK logger writing through pino at `level` (`destination` for tests; stdout otherwise). */
export function sdkLogger(level: Config['LOG_LEVEL'], destination?: pino.DestinationStream): Logger {
  const log = pino({ level, base: { name: 'temporal-sdk' } }, destination);
  const write = (sdkLevel: LogLevel, message: string, meta?: LogMetadata) => log[pinoLevels[sdkLevel]](meta ?? {}, message);
  return {
    log: write,
    trace: (message, meta) => write('TRACE', message, meta),
    debug: (message, meta) => write('DEBUG', message, meta),
    info: (message, meta) => write('INFO', message, meta),
    warn: (message, meta) => write('WARN', message, meta),
    error: (message, meta) => write('ERROR', message, meta),
  };
}

/**
 * Installs the process's Temporal runtime once, before any worker or native connection. The core's
 * filter drops what LOG_LEVEL drops before it crosses into JavaScript; `forward` hands the rest to
 * the pino logger. Signals are ours: whoever calls this owns shutdown order.
 */
export function installWorkerRuntime(level: Config['LOG_LEVEL']): void {
  const sdkLevel = sdkLevels[level];
  Runtime.install({
    shutdownSignals: [],
    logger: sdkLogger(level),
    telemetryOptions: { logging: { filter: { core: sdkLevel, other: sdkLevel }, forward: {} } },
  });
}
