import { describe, expect, it } from 'vitest';
import { compareVersions, formatVersion, nextMinorVersion, parseVersion, parseVersionRequest, resolveDeploymentVersion } from './versions.js';

const row = (version: string, id = version) => {
  const v = parseVersion(version)!;
  return { id, version_major: v.major, version_minor: v.minor };
};

describe('parseVersion and formatVersion', () => {
  it('reads MAJOR.MINOR and writes it back', () => {
    expect(parseVersion('1.2')).toEqual({ major: 1, minor: 2 });
    expect(parseVersion('0.0')).toEqual({ major: 0, minor: 0 });
    expect(parseVersion('10.123')).toEqual({ major: 10, minor: 123 });
    expect(formatVersion({ major: 3, minor: 14 })).toBe('3.14');
  });

  it.each(['', '1', '1.', '.1', '1.2.3', 'v1.0', '01.0', '1.01', '-1.0', '1.0 ', ' 1.0', '1e3.0', '1234567890.0', '^1.0'])('refuses %j', (text) => {
    expect(parseVersion(text)).toBeNull();
  });

  it('orders by major, then minor (numerically, not as text)', () => {
    expect(compareVersions({ major: 1, minor: 10 }, { major: 1, minor: 9 })).toBeGreaterThan(0);
    expect(compareVersions({ major: 1, minor: 99 }, { major: 2, minor: 0 })).toBeLessThan(0);
    expect(compareVersions({ major: 2, minor: 1 }, { major: 2, minor: 1 })).toBe(0);
  });
});

describe('nextMinorVersion', () => {
  it('starts at 1.0 and goes to the next minor after the highest', () => {
    expect(nextMinorVersion([])).toEqual({ major: 1, minor: 0 });
    expect(nextMinorVersion([{ major: 1, minor: 0 }])).toEqual({ major: 1, minor: 1 });
    expect(nextMinorVersion([{ major: 1, minor: 9 }, { major: 1, minor: 10 }, { major: 1, minor: 2 }])).toEqual({ major: 1, minor: 11 });
    expect(nextMinorVersion([{ major: 2, minor: 0 }, { major: 1, minor: 5 }])).toEqual({ major: 2, minor: 1 });
  });
});

describe('parseVersionRequest', () => {
  it('knows the three forms and refuses the rest', () => {
    expect(parseVersionRequest(undefined)).toEqual({ kind: 'newest' });
    expect(parseVersionRequest(null)).toEqual({ kind: 'newest' });
    expect(parseVersionRequest('latest')).toEqual({ kind: 'newest' });
    expect(parseVersionRequest('1.0')).toEqual({ kind: 'exact', version: { major: 1, minor: 0 } });
    expect(parseVersionRequest('^1.0')).toEqual({ kind: 'compatible', version: { major: 1, minor: 0 } });
    expect(parseVersionRequest('^1')).toBeNull();
    expect(parseVersionRequest('1')).toBeNull();
    expect(parseVersionRequest('')).toBeNull();
  });
});

describe('resolveDeploymentVersion', () => {
  const deployments = [row('1.0'), row('1.2'), row('1.10'), row('2.0'), row('2.1'), row('0.3')];

  it('omitted (or latest) is the highest version', () => {
    expect(resolveDeploymentVersion(deployments, undefined)?.id).toBe('2.1');
    expect(resolveDeploymentVersion(deployments, 'latest')?.id).toBe('2.1');
  });

  it('1.0 matches exactly, or nothing', () => {
    expect(resolveDeploymentVersion(deployments, '1.2')?.id).toBe('1.2');
    expect(resolveDeploymentVersion(deployments, '1.1')).toBeNull();
    expect(resolveDeploymentVersion(deployments, '3.0')).toBeNull();
  });

  it('^1.0 is the newest minor of major 1; ^1.N needs minor ≥ N', () => {
    expect(resolveDeploymentVersion(deployments, '^1.0')?.id).toBe('1.10');
    expect(resolveDeploymentVersion(deployments, '^2.0')?.id).toBe('2.1');
    expect(resolveDeploymentVersion(deployments, '^1.11')).toBeNull();
    expect(resolveDeploymentVersion(deployments, '^3.0')).toBeNull();
  });

  it('no deployments resolve to null whatever is asked', () => {
    expect(resolveDeploymentVersion([], undefined)).toBeNull();
    expect(resolveDeploymentVersion([], '^1.0')).toBeNull();
  });

  it('a malformed request matches nothing (the run routes answer it 404 like an unknown version)', () => {
    for (const bad of ['1', 'v1.0', '^x', '1.0.0', '']) expect(resolveDeploymentVersion(deployments, bad)).toBeNull();
  });
});
