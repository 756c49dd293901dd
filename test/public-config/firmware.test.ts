import { createHash, randomBytes } from 'node:crypto';
import { readdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.js';
import { AppError } from '../../shared/errors.js';
import { registerFirmware, type FirmwareRef } from '../../shared/public-config/firmware.js';
import { createObjectStore, objectKeys, objectStoreDir } from '../../shared/storage/object-store.js';
import { objectUrlSigner, signedObjectUrl, type ObjectUrlSigner } from '../../shared/storage/signed-urls.js';
import { commands } from '../../scripts/cli/commands.js';
import { CliError, parseFlags } from '../../scripts/cli/flags.js';
import { runCli } from '../harness/cli.js';
import { withSetting } from '../harness/settings.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

/** The CLI starts a process of its own: seconds on a loaded machine. */
const CLI_TIMEOUT_MS = 120_000;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;

describe('device firmware by signed URL (spec §4.10, CONTRACTS.md "Public configuration")', () => {
  let stack: TestStack;
  let signer: ObjectUrlSigner;
  /** Where `app.listen` answers, for a real client that follows redirects. */
  let base: string;
  let fileCounter = 0;

  /** A file on disk with `bytes`, as an operator would hand to the CLI. */
  async function fileWith(bytes: Buffer): Promise<string> {
    const file = path.join(stack.config.DATA_DIR, `upload-${fileCounter++}.bin`);
    await writeFile(file, bytes);
    return file;
  }
  async function register(ref: FirmwareRef, bytes: Buffer) {
    return registerFirmware({ db: stack.db, store: createObjectStore(stack.config) }, { ...ref, file: await fileWith(bytes) });
  }
  const firmwarePath = (ref: FirmwareRef) => `/public/firmware/${ref.model}/${ref.module}/${ref.fileName}`;
  const firmwareRows = () => stack.db.selectFrom('firmware_files').selectAll().orderBy('model').orderBy('module').orderBy('file_name').execute();
  const storedObjects = async () => (await readdir(objectStoreDir(stack.config), { recursive: true }).catch(() => [])).sort();
  /** The path and query of a Location, to replay it through `inject`. */
  const pathOf = (location: string) => { const url = new URL(location); return `${url.pathname}${url.search}`; };

  /** A GET whose path goes on the wire exactly as written (fetch and inject resolve `..` segments first). */
  const rawGet = (requestPath: string) => new Promise<{ status: number; body: string }>((resolve, reject) => {
    http.get({ host: '127.0.0.1', port: new URL(base).port, path: requestPath }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => { body += chunk; }).on('end', () => resolve({ status: response.statusCode!, body }));
    }).on('error', reject);
  });

  beforeAll(async () => {
    stack = await createTestStack();
    signer = objectUrlSigner(stack.deps.secrets);
    await stack.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(stack.app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await stack?.close();
  });

  describe('GET /public/firmware/:model/:module/:fileName', () => {
    const ref: FirmwareRef = { model: 'DR-1.a_b', module: 'main', fileName: 'main_v1.2.3+build.bin' };
    const bytes = randomBytes(96 * 1024 + 7);
    beforeAll(async () => {
      await register(ref, bytes);
    });

    it('answers 302 to <origin>/object-store/firmware/<sha256> with expires within the TTL and a sig, Cache-Control no-store', async () => {
      const before = Math.floor(Date.now() / 1000);
      const response = await stack.app.inject({ method: 'GET', url: firmwarePath(ref), headers: { host: '127.0.0.1:3000' } });
      expect(response.statusCode).toBe(302);
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.body).toBe('');
      const location = new URL(response.headers.location as string);
      expect(`${location.origin}${location.pathname}`).toBe(`http://127.0.0.1:3000/object-store/${objectKeys.firmware(sha256(bytes))}`);
      expect([...location.searchParams.keys()].sort()).toEqual(['expires', 'name', 'sig']);
      expect(location.searchParams.get('name')).toBe(ref.fileName);
      expect(location.searchParams.get('sig')).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const expires = Number(location.searchParams.get('expires'));
      expect(expires).toBeGreaterThanOrEqual(before + 300);
      expect(expires).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 300);
    });

    it('signs for public.firmware_url_ttl_seconds', async () => {
      await withSetting(stack, 'public.firmware_url_ttl_seconds', 42, async () => {
        const before = Math.floor(Date.now() / 1000);
        const response = await stack.app.inject({ method: 'GET', url: firmwarePath(ref) });
        const expires = Number(new URL(response.headers.location as string).searchParams.get('expires'));
        expect(expires - before).toBeGreaterThanOrEqual(42);
        expect(expires - before).toBeLessThanOrEqual(43);
      });
    });

    it('a real client following the redirect gets exactly the bytes, as an attachment with their exact length', async () => {
      const response = await fetch(`${base}${firmwarePath(ref)}`);
      expect(response.status).toBe(200);
      expect(response.redirected).toBe(true);
      expect(response.url.startsWith(`${base}/object-store/firmware/`)).toBe(true);
      expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
      expect(response.headers.get('content-length')).toBe(String(bytes.length));
      expect(response.headers.get('content-type')).toBe('application/octet-stream');
      expect(response.headers.get('content-disposition')).toBe(`attachment; filename="${ref.fileName}"; filename*=UTF-8''${encodeURIComponent(ref.fileName)}`);
      expect(response.headers.get('accept-ranges')).toBe('bytes');
      expect(response.headers.get('cache-control')).toMatch(/^private, max-age=(29\d|300)$/);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      expect(response.headers.get('transfer-encoding')).toBeNull();
    });

    it('the signed URL answers one Range with 206, HEAD with the headers only, and an unsatisfiable range with 416', async () => {
      const location = (await stack.app.inject({ method: 'GET', url: firmwarePath(ref) })).headers.location as string;
      const partial = await fetch(`${base}${pathOf(location)}`, { headers: { range: 'bytes=1000-1999' } });
      expect(partial.status).toBe(206);
      expect(partial.headers.get('content-range')).toBe(`bytes 1000-1999/${bytes.length}`);
      expect(partial.headers.get('content-length')).toBe('1000');
      expect(Buffer.from(await partial.arrayBuffer()).equals(bytes.subarray(1000, 2000))).toBe(true);

      const tail = await stack.app.inject({ method: 'GET', url: pathOf(location), headers: { range: 'bytes=-7' } });
      expect(tail.statusCode).toBe(206);
      expect(tail.rawPayload.equals(bytes.subarray(bytes.length - 7))).toBe(true);

      const head = await stack.app.inject({ method: 'HEAD', url: pathOf(location) });
      expect(head.statusCode).toBe(200);
      expect(head.headers['content-length']).toBe(String(bytes.length));
      expect(head.rawPayload.length).toBe(0);

      for (const range of [`bytes=${bytes.length}-`, 'bytes=0-1,5-9', 'items=0-1']) {
        const refused = await stack.app.inject({ method: 'GET', url: pathOf(location), headers: { range } });
        expect(refused.statusCode, range).toBe(416);
        expect(refused.headers['content-range']).toBe(`bytes */${bytes.length}`);
        expect(refused.json()).toMatchObject({ error: 'range_not_satisfiable' });
      }
    });

    it('PUBLIC_BASE_URL, when set, is the origin of the link (https, path kept)', async () => {
      const app = await buildApp({ ...stack.deps, config: { ...stack.config, PUBLIC_BASE_URL: 'https://downloads.example.com/' } }, { logger: false });
      const forced = await buildApp({ ...stack.deps, config: { ...stack.config, PUBLIC_BASE_URL: 'http://cdn.example.com/svc' } }, { logger: false });
      try {
        const response = await app.inject({ method: 'GET', url: firmwarePath(ref), headers: { 'x-forwarded-host': 'ignored.example.org' } });
        expect(response.statusCode).toBe(302);
        expect(response.headers.location).toMatch(new RegExp(`^https://downloads\\.example\\.com/object-store/firmware/${sha256(bytes)}\\?expires=\\d+&name=`));
        const viaPath = await forced.inject({ method: 'GET', url: firmwarePath(ref) });
        expect(viaPath.headers.location).toMatch(/^https:\/\/cdn\.example\.com\/svc\/object-store\/firmware\//);
      } finally {
        await app.close();
        await forced.close();
      }
    });

    it('without PUBLIC_BASE_URL, X-Forwarded-Host/-Proto shape the origin from a trusted peer only; a non-loopback host always gets https', async () => {
      const forwarded = { host: '127.0.0.1:3000', 'x-forwarded-host': 'dl.example.org', 'x-forwarded-proto': 'http' };
      const trusted = await stack.app.inject({ method: 'GET', url: firmwarePath(ref), headers: forwarded });
      expect(trusted.headers.location).toMatch(/^https:\/\/dl\.example\.org\/object-store\/firmware\//);

      const untrusted = await stack.app.inject({ method: 'GET', url: firmwarePath(ref), headers: forwarded, remoteAddress: '203.0.113.9' });
      expect(untrusted.headers.location).toMatch(/^http:\/\/127\.0\.0\.1:3000\/object-store\/firmware\//);

      const plainHost = await stack.app.inject({ method: 'GET', url: firmwarePath(ref), headers: { host: 'Files.Example.net:8080' }, remoteAddress: '203.0.113.9' });
      expect(plainHost.headers.location).toMatch(/^https:\/\/files\.example\.net:8080\/object-store\/firmware\//);

      const junkHost = await stack.app.inject({ method: 'GET', url: firmwarePath(ref), headers: { host: 'a@b.example' }, remoteAddress: '203.0.113.9' });
      expect(junkHost.statusCode).toBe(400);
      expect(junkHost.json()).toEqual({ success: false, error: { code: 'INVALID_REQUEST', message: expect.stringContaining('Host') } });
    });

    it('refuses a tampered signature, another key, a changed expiry or name, a missing part, and an expired link with 403', async () => {
      const location = new URL((await stack.app.inject({ method: 'GET', url: firmwarePath(ref) })).headers.location as string);
      const sig = location.searchParams.get('sig')!;
      const expires = location.searchParams.get('expires')!;
      const other = await register({ model: unique('M'), module: 'wifi', fileName: 'other.bin' }, randomBytes(100));
      const variants: Array<[string, (url: URL) => void]> = [
        ['tampered sig', (url) => url.searchParams.set('sig', `${sig.slice(0, 10)}${sig[10] === 'A' ? 'B' : 'A'}${sig.slice(11)}`)],
        ['another object', (url) => { url.pathname = `/object-store/${objectKeys.firmware(other.sha256)}`; }],
        ['a later expiry', (url) => url.searchParams.set('expires', String(Number(expires) + 3600))],
        ['another name', (url) => url.searchParams.set('name', 'evil.exe')],
        ['no sig', (url) => url.searchParams.delete('sig')],
        ['no expires', (url) => url.searchParams.delete('expires')],
        ['two sigs', (url) => url.searchParams.append('sig', sig)],
      ];
      for (const [what, change] of variants) {
        const url = new URL(location);
        change(url);
        const response = await stack.app.inject({ method: 'GET', url: pathOf(url.toString()) });
        expect(response.statusCode, what).toBe(403);
        expect(response.json(), what).toEqual({ error: 'invalid_signature', message: expect.any(String) });
        expect(response.headers['content-disposition'], what).toBeUndefined();
      }
      const untouched = await stack.app.inject({ method: 'GET', url: pathOf(location.toString()) });
      expect(untouched.statusCode).toBe(200);

      const past = signedObjectUrl(signer, base, { key: objectKeys.firmware(sha256(bytes)), name: ref.fileName }, -1);
      const expired = await stack.app.inject({ method: 'GET', url: pathOf(past) });
      expect(expired.statusCode).toBe(403);
      expect(expired.json()).toEqual({ error: 'url_expired', message: expect.any(String) });
    });

    it('a link whose TTL runs out while unused is refused (ttl 1 s, then wait)', async () => {
      await withSetting(stack, 'public.firmware_url_ttl_seconds', 1, async () => {
        const location = (await stack.app.inject({ method: 'GET', url: firmwarePath(ref) })).headers.location as string;
        await new Promise((resolve) => setTimeout(resolve, 2_100));
        const response = await stack.app.inject({ method: 'GET', url: pathOf(location) });
        expect(response.statusCode).toBe(403);
        expect(response.json()).toMatchObject({ error: 'url_expired' });
      });
    });

    it('a valid link to an object that is not in the store is 404', async () => {
      const missing = signedObjectUrl(signer, base, { key: objectKeys.firmware('0'.repeat(64)), name: 'gone.bin' }, 60);
      const response = await stack.app.inject({ method: 'GET', url: pathOf(missing) });
      expect(response.statusCode).toBe(404);
      expect(response.json()).toEqual({ error: 'not_found', message: 'Object not found' });
    });

    it('refuses a bad module, ".." or NUL in the model or file name, and other unsafe names with 400 INVALID_REQUEST, an unknown file with 404', async () => {
      const rowsBefore = await firmwareRows();
      const bad = [
        `/public/firmware/${ref.model}/foo/${ref.fileName}`,
        `/public/firmware/${ref.model}/MAIN/${ref.fileName}`,
        `/public/firmware/DR..1/main/${ref.fileName}`,
        `/public/firmware/DR%001/main/${ref.fileName}`,
        `/public/firmware/${'M'.repeat(65)}/main/${ref.fileName}`,
        `/public/firmware/${ref.model}/main/main..bin`,
        `/public/firmware/${ref.model}/main/main%00.bin`,
        `/public/firmware/${ref.model}/main/a%2Fb.bin`,
        `/public/firmware/${ref.model}/main/a%5Cb.bin`,
        `/public/firmware/${ref.model}/main/a%20b.bin`,
      ];
      for (const url of bad) {
        const response = await stack.app.inject({ method: 'GET', url });
        expect(response.statusCode, url).toBe(400);
        expect(response.json(), url).toEqual({ success: false, error: { code: 'INVALID_REQUEST', message: expect.any(String) } });
        expect(response.headers.location, url).toBeUndefined();
      }
      // A whole `..` segment: clients (and inject) resolve it before sending; sent raw, the parameter is refused.
      for (const url of [`/public/firmware/%2E%2E/main/${ref.fileName}`, `/public/firmware/${ref.model}/main/%2E%2E`]) {
        const response = await rawGet(url);
        expect(response.status, url).toBe(400);
        expect(JSON.parse(response.body), url).toEqual({ success: false, error: { code: 'INVALID_REQUEST', message: expect.any(String) } });
      }
      for (const url of [`/public/firmware/${ref.model}/wifi/${ref.fileName}`, `/public/firmware/${ref.model}/main/main_v9.bin`, `/public/firmware/NOPE/main/${ref.fileName}`]) {
        const response = await stack.app.inject({ method: 'GET', url });
        expect(response.statusCode, url).toBe(404);
        expect(response.json(), url).toEqual({ success: false, error: { code: 'NOT_FOUND', message: expect.any(String) } });
      }
      expect(await firmwareRows()).toEqual(rowsBefore);
    });
  });

  it('documents both routes in OpenAPI', async () => {
    const doc = (await stack.app.inject({ method: 'GET', url: '/docs/json' })).json();
    expect(doc.paths['/public/firmware/{model}/{module}/{fileName}'].get.tags).toEqual(['public-config']);
    expect(Object.keys(doc.paths['/object-store/{*}'] ?? doc.paths['/object-store/*']).sort()).toEqual(['get', 'head']);
  });

  describe('asset register-firmware', () => {
    it('prints { model, module, fileName }; the route then redirects to its bytes', { timeout: CLI_TIMEOUT_MS }, async () => {
      const ref: FirmwareRef = { model: unique('CLI'), module: 'wifi', fileName: 'wifi_2.0.bin' };
      const bytes = randomBytes(20_000);
      const result = await runCli(['asset', 'register-firmware', '--model', ref.model, '--module', 'wifi', '--file', await fileWith(bytes), '--file-name', ref.fileName], stack.env);
      expect(result.code, result.stderr).toBe(0);
      expect(result.json).toEqual(ref);
      expect(await stack.db.selectFrom('firmware_files').select(['sha256', 'size']).where('model', '=', ref.model).execute())
        .toEqual([{ sha256: sha256(bytes), size: bytes.length }]);

      const download = await fetch(`${base}${firmwarePath(ref)}`);
      expect(download.status).toBe(200);
      expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);
    });

    it('re-registering the same model, module and name replaces the bytes it downloads', async () => {
      const ref: FirmwareRef = { model: unique('RE'), module: 'main', fileName: 'fw.bin' };
      const [first, second] = [randomBytes(5_000), randomBytes(6_000)];
      await register(ref, first);
      const oldLink = (await stack.app.inject({ method: 'GET', url: firmwarePath(ref) })).headers.location as string;
      await register(ref, second);

      const rows = await stack.db.selectFrom('firmware_files').select(['sha256', 'size']).where('model', '=', ref.model).execute();
      expect(rows).toEqual([{ sha256: sha256(second), size: second.length }]);
      const download = await fetch(`${base}${firmwarePath(ref)}`);
      expect(Buffer.from(await download.arrayBuffer()).equals(second)).toBe(true);
      // A link handed out before names the old content and keeps serving it until it expires.
      const old = await stack.app.inject({ method: 'GET', url: pathOf(oldLink) });
      expect(old.rawPayload.equals(first)).toBe(true);
    });

    it('refuses a bad module, model, file name or file, registering and storing nothing', async () => {
      const cliHere = async (...args: string[]) => {
        try {
          await commands['asset register-firmware']!(parseFlags(args), { config: stack.config, db: () => stack.db, temporalAddress: () => '', warn: () => {} });
          return null;
        } catch (error) {
          if (error instanceof CliError || error instanceof AppError) return error;
          throw error;
        }
      };
      const file = await fileWith(randomBytes(1000));
      const [rowsBefore, objectsBefore] = [await firmwareRows(), await storedObjects()];
      const cases: Array<[string[], RegExp]> = [
        [['--model', 'M1', '--module', 'foo', '--file', file, '--file-name', 'a.bin'], /--module: expected main or wifi/],
        [['--model', 'M..1', '--module', 'main', '--file', file, '--file-name', 'a.bin'], /--model: must not contain "\.\."/],
        [['--model', 'M/1', '--module', 'main', '--file', file, '--file-name', 'a.bin'], /--model/],
        [['--model', 'M1', '--module', 'main', '--file', file, '--file-name', 'a..bin'], /--file-name: must not contain/],
        [['--model', 'M1', '--module', 'main', '--file', file, '--file-name', 'a\u0000.bin'], /--file-name/],
        [['--model', 'M1', '--module', 'main', '--file', file, '--file-name', '../a.bin'], /--file-name/],
        [['--model', 'M1', '--module', 'main', '--file', `${file}.missing`, '--file-name', 'a.bin'], /--file: cannot read .* \(ENOENT\)/],
        [['--model', 'M1', '--module', 'main', '--file', stack.config.DATA_DIR, '--file-name', 'a.bin'], /--file: .* is not a regular file/],
        [['--model', 'M1', '--module', 'main', '--file-name', 'a.bin'], /Missing required flag --file/],
      ];
      for (const [args, message] of cases) {
        const error = await cliHere(...args);
        expect(error, args.join(' ')).toBeInstanceOf(CliError);
        expect(error!.message, args.join(' ')).toMatch(message);
      }
      expect(await firmwareRows()).toEqual(rowsBefore);
      expect(await storedObjects()).toEqual(objectsBefore);
    });
  });
});
