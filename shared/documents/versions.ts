
// Deployment versions are `MAJOR.MINOR` (spec §9). Pure code: the editor API, the CLI and the run
// endpoints share it, and a workflow may import it.

export interface Version { major: number; minor: number }

/** A deployment row, or anything else that carries its version in the database's columns. */
export interface VersionedRow { version_major: number; version_minor: number }

// Up to 9 digits keeps both parts inside PostgreSQL `integer`; no leading zeros so `1.01` ≠ `1.1` never arises.
const VERSION = /^(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})$/;

/** `'1.2'` → `{ major: 1, minor: 2 }`; anything else (`'1'`, `'1.2.3'`, `'01.0'`, `'v1.0'`) → null. */
export function parseVersion(text: string): Version | null {
  const match = VERSION.exec(text);
  return match ? { major: Number(match[1]), minor: Number(match[2]) } : null;
}

export const formatVersion = (v: Version): string => `${v.major}.${v.minor}`;

export const versionOfRow = (row: VersionedRow): Version => ({ major: row.version_major, minor: row.version_minor });

/** Negative when `a` is older than `b`, by major then minor. */
export const compareVersions = (a: Version, b: Version): number => a.major - b.major || a.minor - b.minor;

/** The highest version, or null for none. */
export function newestVersion(versions: readonly Version[]): Version | null {
  return versions.reduce<Version | null>((best, v) => (best === null || compareVersions(v, best) > 0 ? v : best), null);
}

/** The version a publish without an explicit one gets: `1.0` first, then the next minor after the highest. */
export function nextMinorVersion(existing: readonly Version[]): Version {
  const newest = newestVersion(existing);
  return newest ? { major: newest.major, minor: newest.minor + 1 } : { major: 1, minor: 0 };
}

export type VersionRequest =
  | { kind: 'newest' }
  | { kind: 'exact'; version: Version }
  /** `^1.2`: the newest deployment of major 1 whose minor is at least 2 (`^1.0` = newest of major 1). */
  | { kind: 'compatible'; version: Version };

/** A run request's `version`: omitted (or `latest`) → newest, `1.0` → exact, `^1.0` → newest of major 1; malformed → null. */
export function parseVersionRequest(requested: string | null | undefined): VersionRequest | null {
  if (requested === undefined || requested === null || requested === 'latest') return { kind: 'newest' };
  if (requested.startsWith('^')) {
    const version = parseVersion(requested.slice(1));
    return version ? { kind: 'compatible', version } : null;
  }
  const version = parseVersion(requested);
  return version ? { kind: 'exact', version } : null;
}

/**
 * Picks the deployment a run request names (spec §4.1 `version`, §9) among a document's active
 * deployments (the caller leaves out deleted ones). Returns null when no deployment matches,
 * and when `requested` is not `MAJOR.MINOR`, `^MAJOR.MINOR`, `latest` or omitted: every caller
 * answers a version that names nothing with the same 404 (spec §7.2 `Deployment not found`).
 */
export function resolveDeploymentVersion<T extends VersionedRow>(deployments: readonly T[], requested: string | null | undefined): T | null {
  const request = parseVersionRequest(requested);
  if (!request) return null;
  const candidates = deployments.filter((d) => {
    const v = versionOfRow(d);
    switch (request.kind) {
      case 'newest': return true;
      case 'exact': return compareVersions(v, request.version) === 0;
      case 'compatible': return v.major === request.version.major && v.minor >= request.version.minor;
    }
  });
  return candidates.reduce<T | null>((best, d) => (best === null || compareVersions(versionOfRow(d), versionOfRow(best)) > 0 ? d : best), null);
}
