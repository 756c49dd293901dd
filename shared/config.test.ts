import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, requireProductionTargets } from './config.js';

describe('configuration', () => {
  it('has working defaults for development', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ PORT: 3000, HOST: '127.0.0.1', TEMPORAL_NAMESPACE: 'default', TEMPORAL_UI_PORT: 8233 });
    expect(config.DATABASE_URL).toBeUndefined();
  });

  it('names the variable that is wrong', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ LOG_LEVEL: 'loud' })).toThrow(/LOG_LEVEL/);
  });

  it('production entries require both engines, naming what is missing', () => {
    expect(() => requireProductionTargets(loadConfig({}))).toThrow(new ConfigError('DATABASE_URL and TEMPORAL_ADDRESS must be set (use `npm start` for the embedded development stack)'));
    expect(() => requireProductionTargets(loadConfig({ DATABASE_URL: 'postgres://x' }))).toThrow(/^TEMPORAL_ADDRESS must be set/);
    expect(requireProductionTargets(loadConfig({ DATABASE_URL: 'postgres://x', TEMPORAL_ADDRESS: 't:7233' })))
      .toEqual({ databaseUrl: 'postgres://x', temporalAddress: 't:7233' });
  });
});
