import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * SSRF guard of the `http` block: which URLs a run may fetch, and the exact addresses it may connect
 * to. The classification and allow-list rules are pure; `vetUrl` adds the one DNS lookup, and
 * `pinnedLookup` hands the vetted addresses to the HTTP client so it never resolves the name again.
 *
 * Public means: IPv4 outside every special range (loopback, private, link-local, CGNAT, multicast,
 * reserved, …) and IPv6 inside global unicast 2000::/3 outside its special ranges. IPv6 forms that
 * embed an IPv4 address (mapped, translated, NAT64 64:ff9b::/96, 6to4, Teredo) are judged by the
 * embedded address.
 */

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** A refusal; its message names only what the user typed (never a resolved address). */
export class SsrfBlockedError extends Error {
  override readonly name = 'SsrfBlockedError';
  /** Short class of the refusal: `scheme`, `credentials`, or the address range (`loopback`, `private`, …). */
  constructor(message: string, readonly reason: string) {
    super(message);
  }
}

/** A URL that cannot be parsed at all. */
export class InvalidUrlError extends Error {
  override readonly name = 'InvalidUrlError';
}

// ---------------------------------------------------------------------------------------------
// Address classification (pure)

function v4FromParts(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

/**
 * Why an address is not public (the ipaddr.js range name, e.g. `loopback`, `private`,
 * `ipv4Mapped:loopback`), or null when it is a public unicast address.
 */
export function nonPublicReason(address: Address): string | null {
  if (address.kind() === 'ipv4') {
    const range = address.range();
    return range === 'unicast' ? null : range;
  }
  const v6 = address as ipaddr.IPv6;
  const parts = v6.parts;
  const embedded = (label: string, ...v4s: ipaddr.IPv4[]): string | null => {
    for (const v4 of v4s) {
      const inner = nonPublicReason(v4);
      if (inner) return `${label}:${inner}`;
    }
    return null;
  };
  const range = v6.range();
  switch (range) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
      return embedded(range, v6.toIPv4Address());
    case 'rfc6145': // ::ffff:0:a.b.c.d (SIIT)
      return embedded(range, v4FromParts(parts[6]!, parts[7]!));
    case 'rfc6052': // 64:ff9b::a.b.c.d is NAT64 of a.b.c.d; 64:ff9b:1::/48 is for local use only
      if (parts[2] === 0 && parts[3] === 0 && parts[4] === 0 && parts[5] === 0) {
        return embedded(range, v4FromParts(parts[6]!, parts[7]!));
      }
      return range;
    case '6to4': // 2002:AABB:CCDD::/48
      return embedded(range, v4FromParts(parts[1]!, parts[2]!));
    case 'teredo': // 2001:0:SSSS:SSSS:flags:port:~CCCC:~CCCC (server, obfuscated client)
      return embedded(range, v4FromParts(parts[2]!, parts[3]!), v4FromParts(~parts[6]! & 0xffff, ~parts[7]! & 0xffff));
    case 'unicast':
      // Only 2000::/3 is allocated as global unicast; the rest (incl. IPv4-compatible ::a.b.c.d in ::/8) is reserved.
      return (parts[0]! & 0xe000) === 0x2000 ? null : 'reserved';
    default:
      return range;
  }
}

/** Parses an IP literal (any form ipaddr.js accepts, IPv6 with or without brackets), or null. */
export function parseIp(text: string): Address | null {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  // Zone ids (fe80::1%eth0) never reach here from a URL; refuse to interpret them anywhere else.
  if (bare.includes('%') || !ipaddr.isValid(bare)) return null;
  return ipaddr.parse(bare);
}

export function isPublicAddress(address: string | Address): boolean {
  const parsed = typeof address === 'string' ? parseIp(address) : address;
  return parsed !== null && nonPublicReason(parsed) === null;
}

// ---------------------------------------------------------------------------------------------
// Allow list (pure)

export type AllowRule =
  /** A host name, matched against the URL's (normalized) host name. */
  | { kind: 'name'; host: string; port?: number }
  /** An IP address or CIDR, matched against every address the request would connect to. */
  | { kind: 'cidr'; range: [Address, number]; port?: number };

function normalizeHostName(host: string): string {
  const lower = host.toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

/** IPv4-mapped IPv6 addresses compare as their IPv4 address. */
function canonical(address: Address): Address {
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()
    ? (address as ipaddr.IPv6).toIPv4Address()
    : address;
}

function hostRule(host: string, port: number | undefined): AllowRule | null {
  const ip = parseIp(host);
  if (ip) {
    const address = canonical(ip);
    return { kind: 'cidr', range: [address, address.kind() === 'ipv4' ? 32 : 128], ...(port === undefined ? {} : { port }) };
  }
  let normalized: string;
  try {
    normalized = new URL(`http://${host}/`).hostname;
  } catch {
    return null;
  }
  if (normalized !== host.toLowerCase() && parseIp(normalized)) return hostRule(normalized, port); // 0x7f.1 and friends
  if (!normalized || normalized.includes(':')) return null;
  return { kind: 'name', host: normalizeHostName(normalized), ...(port === undefined ? {} : { port }) };
}

/**
 * Parses `http_block.allow_hosts`: host names (`api.internal`), `host:port` (`127.0.0.1:8080`,
 * `[::1]:8080`, `api.internal:8443`), IP addresses and CIDRs (`10.0.0.0/8`, `fd00::/8`). An IP
 * (with or without port) matches the address connected to, whatever name resolved to it; a name
 * matches the URL's host name, whatever it resolves to. Entries that parse as none of these are
 * reported through `onInvalid` and ignored.
 */
export function parseAllowList(entries: readonly string[], onInvalid?: (entry: string) => void): AllowRule[] {
  const rules: AllowRule[] = [];
  for (const raw of entries) {
    const entry = raw.trim();
    let rule: AllowRule | null = null;
    if (entry.includes('/')) {
      try {
        const [address, bits] = ipaddr.parseCIDR(entry);
        rule = { kind: 'cidr', range: [address, bits] };
      } catch {
        rule = null;
      }
    } else if (parseIp(entry)) {
      rule = hostRule(entry, undefined);
    } else {
      const match = /^(.*):(\d{1,5})$/.exec(entry);
      const port = match ? Number(match[2]) : undefined;
      const host = match ? match[1]! : entry;
      if (host && (port === undefined || (port > 0 && port < 65536))) rule = hostRule(host, port);
    }
    if (rule) rules.push(rule);
    else onInvalid?.(raw);
  }
  return rules;
}

function effectivePort(url: URL): number {
  if (url.port) return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/** Whether the allow list lets a request to `hostname:port` connect to `address`. */
export function isAllowed(rules: readonly AllowRule[], target: { hostname: string; port: number; address: Address }): boolean {
  const host = normalizeHostName(target.hostname);
  const address = canonical(target.address);
  return rules.some((rule) => {
    if (rule.port !== undefined && rule.port !== target.port) return false;
    if (rule.kind === 'name') return rule.host === host;
    const [base, bits] = rule.range;
    const candidates = [address, target.address];
    return candidates.some((candidate) => candidate.kind() === base.kind() && candidate.match(base, bits));
  });
}

// ---------------------------------------------------------------------------------------------
// URL checks

/** The URL's host name without IPv6 brackets (WHATWG-normalized: 2130706433 and 0x7f.1 are 127.0.0.1). */
export function urlHostname(url: URL): string {
  const host = url.hostname;
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** Parses a URL and checks what needs no DNS: `http:`/`https:` only, no credentials. */
export function checkUrlSyntax(raw: string | URL, base?: URL): URL {
  let url: URL;
  try {
    url = typeof raw === 'string' ? new URL(raw, base) : new URL(raw.href);
  } catch {
    throw new InvalidUrlError(`Invalid URL: ${JSON.stringify(String(raw).slice(0, 200))}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new SsrfBlockedError(`Refused URL scheme "${url.protocol}": only http: and https: are allowed`, 'scheme');
  }
  if (url.username || url.password) {
    throw new SsrfBlockedError('Refused URL with credentials: put them in a header instead', 'credentials');
  }
  if (!url.hostname) throw new InvalidUrlError('Invalid URL: no host');
  return url;
}

export interface VettedTarget {
  url: URL;
  /** Host name without brackets, as the HTTP client must send it (Host header, SNI). */
  hostname: string;
  port: number;
  /** Every address the host resolved to, all checked; the client connects only to these. */
  addresses: LookupAddress[];
}

export type ResolveFn = (hostname: string) => Promise<LookupAddress[]>;

/** node:dns lookup (the OS resolver, like the HTTP client would use), every address. */
export const systemResolve: ResolveFn = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses)));
  });

/** A DNS failure with a message that names only the host the user gave. */
export class HostResolutionError extends Error {
  override readonly name = 'HostResolutionError';
  constructor(hostname: string, readonly code: string | undefined) {
    super(code === 'ENOTFOUND' || code === 'ENODATA' ? `Host not found: ${hostname}` : `Could not resolve host ${hostname}${code ? ` (${code})` : ''}`);
  }
}

/**
 * Checks a URL end to end: syntax, then every address its host resolves to (or the literal IP),
 * each one public or let through by the allow list. Throws SsrfBlockedError, InvalidUrlError or
 * HostResolutionError; returns the addresses to connect to.
 */
export async function vetUrl(raw: string | URL, rules: readonly AllowRule[], options: { resolve?: ResolveFn; base?: URL } = {}): Promise<VettedTarget> {
  const url = checkUrlSyntax(raw, options.base);
  const hostname = urlHostname(url);
  const port = effectivePort(url);
  const literal = parseIp(hostname);
  let addresses: LookupAddress[];
  if (literal) {
    addresses = [{ address: literal.toString(), family: literal.kind() === 'ipv4' ? 4 : 6 }];
  } else {
    try {
      addresses = await (options.resolve ?? systemResolve)(hostname);
    } catch (error) {
      throw new HostResolutionError(hostname, (error as NodeJS.ErrnoException).code);
    }
    if (addresses.length === 0) throw new HostResolutionError(hostname, 'ENOTFOUND');
  }
  for (const { address } of addresses) {
    const parsed = parseIp(address);
    const reason = parsed ? nonPublicReason(parsed) : 'unparseable';
    if (reason === null || (parsed && isAllowed(rules, { hostname, port, address: parsed }))) continue;
    const kind = reason.includes(':') ? `${reason.split(':')[1]} address embedded in IPv6` : reason;
    const what = literal ? `address ${hostname}` : `host ${hostname}, which resolves to a non-public address,`;
    throw new SsrfBlockedError(
      `Refused request to ${what} (${kind}) on port ${port}; ` +
        'an administrator can allow it with the http_block.allow_hosts site setting',
      kind,
    );
  }
  return { url, hostname, port, addresses };
}

/**
 * A `lookup` for node:net / node:http(s) that answers only with the vetted addresses, so the
 * connection goes exactly where the guard looked, while Host and SNI stay the original name.
 */
export function pinnedLookup(addresses: readonly LookupAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
    const list = family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : [...addresses];
    const first = list[0];
    if (!first) {
      callback(Object.assign(new Error('no vetted address for this family'), { code: 'ENOTFOUND' }), '', 0);
    } else if (options.all) {
      callback(null, list);
    } else {
      callback(null, first.address, first.family);
    }
  };
}
