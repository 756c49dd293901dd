import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';

// The RSA keys payment channels are configured with (chan_a and chan_b both sign SHA256withRSA):
// read from environment values, with errors that name the variable.

/**
 * A PEM as environment files carry it: literal `\n` sequences become newlines, and a bare base64
 * body (as chan_b's console hands keys out) is wrapped in `label`'s armour.
 */
export function normalizePem(value: string, label: 'PRIVATE KEY' | 'PUBLIC KEY' = 'PUBLIC KEY'): string {
  const text = value.replace(/\\r\\n|\\n/g, '\n').trim();
  if (text.includes('-----BEGIN')) return text;
  const body = text.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+=*$/.test(body)) return text;
  return `-----BEGIN ${label}-----\n${body.replace(/.{1,64}/g, '$&\n')}-----END ${label}-----`;
}

export function parseRsaPrivateKey(name: string, value: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey(normalizePem(value, 'PRIVATE KEY'));
  } catch (error) {
    throw new Error(`${name} is not a PEM private key: ${(error as Error).message}`, { cause: error });
  }
  return requireRsa(name, key);
}

export function parseRsaPublicKey(name: string, value: string): KeyObject {
  const pem = normalizePem(value, 'PUBLIC KEY');
  // createPublicKey would quietly derive a public key from a private one: the variables were
  // swapped (we never hold a channel's private key), which must not pass unnoticed.
  if (pem.includes('PRIVATE KEY')) throw new Error(`${name} holds a private key; it must be the channel's public key`);
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch (error) {
    throw new Error(`${name} is not a PEM public key: ${(error as Error).message}`, { cause: error });
  }
  return requireRsa(name, key);
}

/** Both protocols are SHA256withRSA: an RSA key only. */
function requireRsa(name: string, key: KeyObject): KeyObject {
  if (key.asymmetricKeyType !== 'rsa') throw new Error(`${name} must be an RSA key, got ${key.asymmetricKeyType ?? 'unknown'}`);
  return key;
}
