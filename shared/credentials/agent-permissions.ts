/**
 * An agent's permission group is a list of grants `METHOD /path/pattern`. In a pattern `*` matches
 * one path segment and a final `**` matches the rest; the method may be `*`. Nothing is granted
 * unless listed.
 */
export function isGranted(grants: readonly string[], method: string, path: string): boolean {
  const segments = path.split('?')[0]!.split('/').filter(Boolean);
  return grants.some((grant) => {
    const [grantMethod, pattern] = grant.trim().split(/\s+/, 2);
    if (!grantMethod || !pattern) return false;
    if (grantMethod !== '*' && grantMethod.toUpperCase() !== method.toUpperCase()) return false;
    const parts = pattern.split('/').filter(Boolean);
    for (let i = 0; i < parts.length; i++) {
      if (parts[i] === '**' && i === parts.length - 1) return segments.length >= i;
      if (i >= segments.length) return false;
      if (parts[i] !== '*' && parts[i] !== segments[i]) return false;
    }
    return parts.length === segments.length;
  });
}

/** Valid grant syntax, for the agent management API. */
export const GRANT_PATTERN = /^(\*|GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) \/[A-Za-z0-9._~:@*/-]*$/;
