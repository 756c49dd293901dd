import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import {
  InvalidUrlError,
  SsrfBlockedError,
  isAllowed,
  isPublicAddress,
  parseAllowList,
  parseIp,
  pinnedLookup,
  vetUrl,
  type ResolveFn,
} from './ssrf-guard.js';

/** A fake resolver: no test here touches real DNS. */
function fakeDns(table: Record<string, string[]>): ResolveFn {
  return async (hostname) => {
    const addresses = table[hostname.replace(/\.$/, '')];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

const dns = fakeDns({
  'public.example': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  'rebind.example': ['93.184.215.14', '10.0.0.5'],
  'private.example': ['192.168.1.10'],
  'metadata.example': ['169.254.169.254'],
  'v6loop.example': ['::1'],
  'mapped.example': ['::ffff:127.0.0.1'],
});

describe('address classification', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback /8'],
    ['::1', 'IPv6 loopback'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', '0/8'],
    ['::', 'IPv6 unspecified'],
    ['10.1.2.3', 'private 10/8'],
    ['172.16.0.1', 'private 172.16/12'],
    ['172.31.255.255', 'private 172.16/12 end'],
    ['192.168.0.1', 'private 192.168/16'],
    ['fc00::1', 'unique local fc00::/7'],
    ['fd12:3456::1', 'unique local fd00::/8'],
    ['169.254.169.254', 'cloud metadata'],
    ['169.254.0.1', 'link-local'],
    ['fe80::1', 'IPv6 link-local'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.255', 'CGNAT end'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'IPv6 multicast'],
    ['240.0.0.1', 'reserved 240/4'],
    ['255.255.255.255', 'broadcast'],
    ['192.0.2.1', 'documentation'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
    ['::ffff:a9fe:a9fe', 'IPv4-mapped metadata'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::7f00:1', 'IPv4-compatible loopback'],
    ['::127.0.0.1', 'IPv4-compatible loopback, dotted'],
    ['::ffff:0:7f00:1', 'SIIT (rfc6145) loopback'],
    ['64:ff9b::7f00:1', 'NAT64 loopback'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 metadata'],
    ['64:ff9b:1::1', 'local-use NAT64'],
    ['2002:7f00:1::1', '6to4 of loopback'],
    ['2002:c0a8:101::1', '6to4 of 192.168.1.1'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'Teredo with client 127.0.0.1'],
    ['2001:0:a00:1:8000:63bf:3fff:fdd2', 'Teredo with server 10.0.0.1'],
    ['2001:db8::1', 'IPv6 documentation'],
    ['100::1', 'IPv6 discard'],
    ['fec0::1', 'deprecated site-local'],
    ['4000::1', 'outside 2000::/3'],
  ])('refuses %s (%s)', (address) => {
    expect(parseIp(address)).not.toBeNull();
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([
    '8.8.8.8', '1.1.1.1', '93.184.215.14', '172.32.0.1', '100.128.0.1', '192.169.0.1', '11.0.0.1',
    '2606:4700:4700::1111', '2a00:1450:4001::200e', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1',
    '2001:0:4136:e378:8000:63bf:f7f7:f7f7', // Teredo, server 65.54.227.120, client 8.8.8.8
  ])('allows public %s', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it('does not treat garbage or zone ids as addresses', () => {
    expect(parseIp('fe80::1%eth0')).toBeNull();
    expect(parseIp('not-an-ip')).toBeNull();
    expect(isPublicAddress('example.com')).toBe(false);
  });
});

describe('URL forms', () => {
  it.each([
    ['http://127.0.0.1/'],
    ['http://2130706433/'],
    ['http://0x7f.1/'],
    ['http://0x7f000001/'],
    ['http://017700000001/'],
    ['http://0177.0.0.1/'],
    ['http://127.1/'],
    ['http://0/'],
    ['http://[::1]/'],
    ['http://[::]/'],
    ['http://[::ffff:127.0.0.1]/'],
    ['http://[::ffff:7f00:1]:8080/'],
    ['http://[64:ff9b::a9fe:a9fe]/'],
    ['http://169.254.169.254/latest/meta-data/'],
    ['https://10.0.0.1:8443/x'],
    ['http://[fe80::1]/'],
    ['http://private.example/'],
    ['http://metadata.example/'],
    ['http://v6loop.example/'],
    ['http://mapped.example/'],
    ['http://rebind.example/'],
    ['HTTP://PRIVATE.EXAMPLE./'],
  ])('refuses %s', async (url) => {
    await expect(vetUrl(url, [], { resolve: dns })).rejects.toBeInstanceOf(SsrfBlockedError);
  });

  it.each(['file:///etc/passwd', 'ftp://example.com/', 'gopher://127.0.0.1:25/', 'data:text/plain,hi', 'javascript:alert(1)', 'ws://public.example/'])(
    'refuses the scheme of %s',
    async (url) => {
      await expect(vetUrl(url, [], { resolve: dns })).rejects.toMatchObject({ name: 'SsrfBlockedError', reason: 'scheme' });
    },
  );

  it('refuses credentials in the URL', async () => {
    await expect(vetUrl('http://user:pw@public.example/', [], { resolve: dns })).rejects.toMatchObject({ reason: 'credentials' });
    await expect(vetUrl('http://user@public.example/', [], { resolve: dns })).rejects.toMatchObject({ reason: 'credentials' });
  });

  it('rejects unparseable URLs as invalid, not as network errors', async () => {
    await expect(vetUrl('not a url', [], { resolve: dns })).rejects.toBeInstanceOf(InvalidUrlError);
    await expect(vetUrl('http://[::1/', [], { resolve: dns })).rejects.toBeInstanceOf(InvalidUrlError);
  });

  it('names neither the resolved address nor anything the user did not type', async () => {
    const error = (await vetUrl('http://private.example/secret?token=abc', [], { resolve: dns }).catch((e: unknown) => e)) as Error;
    expect(error.message).toContain('private.example');
    expect(error.message).not.toContain('192.168');
    expect(error.message).not.toContain('token=abc');
  });

  it('accepts public hosts and literals and returns every vetted address', async () => {
    const target = await vetUrl('https://public.example/path?q=1', [], { resolve: dns });
    expect(target).toMatchObject({ hostname: 'public.example', port: 443 });
    expect(target.addresses.map((a) => a.address)).toEqual(['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c']);
    const literal = await vetUrl('http://[2606:4700:4700::1111]:8080/', [], { resolve: dns });
    expect(literal).toMatchObject({ hostname: '2606:4700:4700::1111', port: 8080, addresses: [{ address: '2606:4700:4700::1111', family: 6 }] });
    expect((await vetUrl('http://134744072/', [], { resolve: dns })).addresses[0]!.address).toBe('8.8.8.8');
  });

  it('reports DNS failures with the host only', async () => {
    await expect(vetUrl('http://nowhere.example/', [], { resolve: dns })).rejects.toMatchObject({ name: 'HostResolutionError', message: 'Host not found: nowhere.example', code: 'ENOTFOUND' });
  });

  it('resolves relative redirects against a base', async () => {
    const target = await vetUrl('/next', [], { resolve: dns, base: new URL('https://public.example/a/b') });
    expect(target.url.href).toBe('https://public.example/next');
  });
});

describe('allow list', () => {
  it('parses names, host:port, IPs and CIDRs and reports junk', () => {
    const invalid: string[] = [];
    const rules = parseAllowList(
      ['Internal.Example.', 'api.internal:8443', '127.0.0.1:3000', '[::1]:3000', '10.0.0.0/8', 'fd00::/8', '192.168.1.7', '::1', '0x7f.1:81', 'http://x/', '10.0.0.0/99', 'host:99999'],
      (entry) => invalid.push(entry),
    );
    expect(invalid).toEqual(['http://x/', '10.0.0.0/99', 'host:99999']);
    expect(rules).toHaveLength(9);
    expect(rules[0]).toEqual({ kind: 'name', host: 'internal.example' });
    expect(rules[1]).toEqual({ kind: 'name', host: 'api.internal', port: 8443 });
    expect(rules[2]).toMatchObject({ kind: 'cidr', port: 3000 });
  });

  it('lets a host name through on any port, and only that name', async () => {
    const rules = parseAllowList(['private.example']);
    await expect(vetUrl('http://private.example:9999/', rules, { resolve: dns })).resolves.toMatchObject({ port: 9999 });
    await expect(vetUrl('http://PRIVATE.example./', rules, { resolve: dns })).resolves.toBeTruthy();
    await expect(vetUrl('http://metadata.example/', rules, { resolve: dns })).rejects.toBeInstanceOf(SsrfBlockedError);
    await expect(vetUrl('http://192.168.1.10/', rules, { resolve: dns })).rejects.toBeInstanceOf(SsrfBlockedError);
  });

  it('lets host:port through on that port only (default ports count)', async () => {
    const rules = parseAllowList(['private.example:8080', '10.0.0.1:80']);
    await expect(vetUrl('http://private.example:8080/', rules, { resolve: dns })).resolves.toBeTruthy();
    await expect(vetUrl('http://private.example:8081/', rules, { resolve: dns })).rejects.toBeInstanceOf(SsrfBlockedError);
    await expect(vetUrl('http://private.example/', rules, { resolve: dns })).rejects.toBeInstanceOf(SsrfBlockedError);
    await expect(vetUrl('http://10.0.0.1/', rules, { resolve: dns })).resolves.toBeTruthy();
    await expect(vetUrl('https://10.0.0.1/', rules, { resolve: dns })).rejects.toBeInstanceOf(SsrfBlockedError);
  });

  it('matches an IP entry against the address connected to, in any spelling', async () => {
    const rules = parseAllowList(['127.0.0.1:3000']);
    for (const url of ['http://127.0.0.1:3000/', 'http://2130706433:3000/', 'http://[::ffff:127.0.0.1]:3000/']) {
      await expect(vetUrl(url, rules, { resolve: dns }), url).resolves.toBeTruthy();
    }
    await expect(vetUrl('http://127.0.0.2:3000/', rules, { resolve: dns })).rejects.toBeInstanceOf(SsrfBlockedError);
    await expect(vetUrl('http://127.0.0.1:3001/', rules, { resolve: dns })).rejects.toBeInstanceOf(SsrfBlockedError);
  });

  it('lets addresses in a CIDR through, and requires every resolved address to pass', async () => {
    const rules = parseAllowList(['192.168.0.0/16', '10.0.0.0/24']);
    await expect(vetUrl('http://private.example/', rules, { resolve: dns })).resolves.toBeTruthy();
    await expect(vetUrl('http://192.168.200.1:1234/', rules, { resolve: dns })).resolves.toBeTruthy();
    await expect(vetUrl('http://rebind.example/', rules, { resolve: dns })).resolves.toBeTruthy(); // public + 10.0.0.5
    await expect(vetUrl('http://10.0.1.5/', rules, { resolve: dns })).rejects.toBeInstanceOf(SsrfBlockedError);
    await expect(vetUrl('http://metadata.example/', rules, { resolve: dns })).rejects.toBeInstanceOf(SsrfBlockedError);
    expect(isAllowed(parseAllowList(['fd00::/8']), { hostname: 'x', port: 80, address: parseIp('fd00::5')! })).toBe(true);
    expect(isAllowed(parseAllowList(['fd00::/8']), { hostname: 'x', port: 80, address: parseIp('fc00::5')! })).toBe(false);
  });
});

describe('pinnedLookup', () => {
  const addresses: LookupAddress[] = [{ address: '93.184.215.14', family: 4 }, { address: '2606:2800::1', family: 6 }];
  const call = (options: object) =>
    new Promise<unknown[]>((resolve) => {
      pinnedLookup(addresses)('anything.example', options, (...args: unknown[]) => resolve(args));
    });

  it('answers only with the vetted addresses, whatever the name', async () => {
    expect(await call({})).toEqual([null, '93.184.215.14', 4]);
    expect(await call({ family: 6 })).toEqual([null, '2606:2800::1', 6]);
    expect(await call({ all: true })).toEqual([null, addresses]);
    const [error] = await new Promise<unknown[]>((resolve) => {
      pinnedLookup([addresses[0]!])('x', { family: 6 }, (...args: unknown[]) => resolve(args));
    });
    expect(error).toMatchObject({ code: 'ENOTFOUND' });
  });
});
