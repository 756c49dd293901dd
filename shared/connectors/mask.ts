import type { ConnectorCredentialField } from '../db/types.js';

// What a connection shows of its credentials (spec §2.5 `credentialMask`): enough for the owner to
// recognise the account, never a secret. Computed once at create and stored, so listing never
// opens a sealed value.

export const SECRET_MASK = '••••••';

/** `alice@example.com` → `al•••@example.com`; `bob` → `b•••`: the domain stays, most of the name goes. */
export function maskUsername(username: string): string {
  const at = username.lastIndexOf('@');
  const local = at > 0 ? username.slice(0, at) : username;
  const domain = at > 0 ? username.slice(at) : '';
  const kept = [...local].slice(0, local.length > 4 ? 2 : 1).join('');
  return `${kept}•••${domain}`;
}

/** Secret fields are a fixed mask (not even their length shows); `username` is partly masked; the rest as given. */
export function maskCredentials(fields: readonly ConnectorCredentialField[], values: Readonly<Record<string, string>>): Record<string, string> {
  const mask: Record<string, string> = {};
  for (const field of fields) {
    const value = values[field.key];
    if (value === undefined) continue;
    mask[field.key] = field.secret ? SECRET_MASK : field.key === 'username' ? maskUsername(value) : value;
  }
  return mask;
}
