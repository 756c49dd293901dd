import { LoggerWithComposedMetadata } from '@temporalio/common';
import { DefaultLogger, type LogEntry } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { sdkLogger } from '../../worker/runtime.js';

// The SDK's composed logger as patches/@temporalio+common+*.patch changes it (docs/decisions.md
// "The workflow sandbox, patched"): the worker logs every activation at TRACE with the activation
// as metadata; when the root logger's level drops TRACE, that metadata is not resolved at all.

describe("the worker's composed logger", () => {
  const composedOver = (level: 'TRACE' | 'WARN') => {
    const entries: LogEntry[] = [];
    let resolved = 0;
    const logger = LoggerWithComposedMetadata.compose(new DefaultLogger(level, (entry) => entries.push(entry)), () => {
      resolved += 1;
      return { sdkComponent: 'worker' };
    });
    return { logger, entries, resolved: () => resolved };
  };

  it('resolves no metadata for a level the root logger drops, and still logs the levels it keeps', () => {
    const { logger, entries, resolved } = composedOver('WARN');
    logger.trace('Got workflow activation', { runId: 'r1' });
    logger.debug('Heartbeats complete');
    expect(resolved()).toBe(0);
    logger.warn('slow activation', { runId: 'r1' });
    expect(resolved()).toBe(1);
    expect(entries.map(({ level, message, meta }) => ({ level, message, meta }))).toEqual([
      { level: 'WARN', message: 'slow activation', meta: { sdkComponent: 'worker', runId: 'r1' } },
    ]);
  });

  it('logs TRACE and DEBUG with their metadata when the root logger keeps them', () => {
    const { logger, entries } = composedOver('TRACE');
    logger.trace('Got workflow activation', { runId: 'r1', unset: undefined });
    logger.debug('Heartbeats complete');
    expect(entries.map(({ level, meta }) => ({ level, meta }))).toEqual([
      { level: 'TRACE', meta: { sdkComponent: 'worker', runId: 'r1' } },
      { level: 'DEBUG', meta: { sdkComponent: 'worker' } },
    ]);
  });
});

describe("the Temporal SDK's logs through pino (issue 45)", () => {
  const captured = (level: 'warn' | 'info') => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = sdkLogger(level, { write: (line: string) => { lines.push(JSON.parse(line) as Record<string, unknown>); } });
    return { logger, lines };
  };

  it('drops INFO at LOG_LEVEL warn and keeps warnings, as JSON lines', () => {
    const { logger, lines } = captured('warn');
    logger.info('Worker state changed', { state: 'RUNNING' });
    logger.log('INFO', 'No Nexus services registered');
    logger.warn('Activity heartbeat failed', { activityId: 'a1' });
    expect(lines).toEqual([expect.objectContaining({ level: 40, name: 'temporal-sdk', msg: 'Activity heartbeat failed', activityId: 'a1' })]);
  });

  it('prints INFO at LOG_LEVEL info', () => {
    const { logger, lines } = captured('info');
    logger.info('Worker state changed', { state: 'RUNNING' });
    expect(lines).toEqual([expect.objectContaining({ level: 30, msg: 'Worker state changed', state: 'RUNNING' })]);
  });
});
