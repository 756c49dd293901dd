import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, unlink, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerBoardAsset, type BoardAssetKind } from '../../shared/public-config/board-assets.js';
import { downloadCacheDir } from '../../shared/storage/download-cache.js';
import { createObjectStore, objectKeys } from '../../shared/storage/object-store.js';
import { AppError } from '../../shared/errors.js';
import { commands } from '../../scripts/cli/commands.js';
import { CliError, parseFlags } from '../../scripts/cli/flags.js';
import { runCli, type CliResult } from '../harness/cli.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

const run = promisify(execFile);
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
/** Byte-for-byte equality, without the deep diff of a megabyte-long array. */
const expectBytes = (actual: Buffer, expected: Buffer) => {
  expect(actual.length).toBe(expected.length);
  expect(actual.equals(expected)).toBe(true);
};
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** Starting the CLI as a process takes seconds on a loaded machine. */
const CLI_TIMEOUT_MS = 120_000;

interface Registered { bytes: Buffer; sha256: string; size: number; path: string; kind: BoardAssetKind; target: string; fileName: string }

/** A raw HTTP/1.1 GET whose path goes out exactly as written (no client-side dot-segment removal). */
function rawGet(base: string, rawPath: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const request = http.request({ host: hostname, port, path: rawPath, method: 'GET' }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
    });
    request.on('error', reject);
    request.end();
  });
}

describe('board downloads (spec §4.10, §8.2; CONTRACTS.md "Public configuration")', () => {
  let stack: TestStack;
  let base: string;
  let cacheDir: string;
  let work: string;
  /** Registered once for most tests: 1 MiB and some, so ranges and resumes are meaningful. */
  let app: Registered;

  const register = async (kind: BoardAssetKind, target: string, fileName: string, size: number): Promise<Registered> => {
    const bytes = randomBytes(size);
    const file = path.join(work, `${randomBytes(6).toString('hex')}-${fileName}`);
    await writeFile(file, bytes);
    const registered = await registerBoardAsset({ db: stack.db, config: stack.config }, { kind, target, filePath: file, fileName });
    return { ...registered, bytes, kind, target, fileName };
  };
  const cached = async () => (await readdir(cacheDir)).sort();
  const rowCount = async () => Number((await stack.db.selectFrom('board_assets').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const storePath = (asset: Registered) => createObjectStore(stack.config).pathOf(objectKeys.boardAsset(asset.kind, asset.target, asset.sha256));
  /** Runs `request`, asserting that the cache directory and the registrations are as before. */
  const leavesNothing = async <T>(request: () => Promise<T>): Promise<T> => {
    const [entries, rows] = [await cached(), await rowCount()];
    const result = await request();
    expect(await cached()).toEqual(entries);
    expect(await rowCount()).toBe(rows);
    return result;
  };
  /** The same command table, flag parser and error mapping as scripts/cli.ts, in this process. */
  const cliHere = async (args: string[], config = stack.config): Promise<CliResult> => {
    const name = args.slice(0, 2).join(' ');
    try {
      const result = await commands[name]!(parseFlags(args.slice(2)), { config, db: () => stack.db, temporalAddress: () => '', warn: () => {} });
      return { code: 0, stdout: JSON.stringify(result), stderr: '', json: result, error: null };
    } catch (error) {
      const fail = (code: number, e: { code?: string; error?: string; message: string }): CliResult =>
        ({ code, stdout: '', stderr: e.message, json: null, error: { error: e.code ?? e.error, message: e.message } });
      if (error instanceof CliError) return fail(2, error);
      if (error instanceof AppError) return fail(1, error);
      throw error;
    }
  };

  beforeAll(async () => {
    stack = await createTestStack();
    base = await stack.app.listen({ port: 0, host: '127.0.0.1' });
    cacheDir = downloadCacheDir(stack.config);
    work = path.join(stack.config.DATA_DIR, 'work');
    await mkdir(work);
    app = await register('board-app', 'macos-arm64', 'Board-App-2.1.0.dmg', 1024 * 1024 + 12_345);
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('asset register (the CLI as a process) prints { sha256, size, path }, and the path downloads the bytes', async () => {
    const bytes = randomBytes(70_000);
    const file = path.join(work, 'fw.bin');
    await writeFile(file, bytes);
    const result = await runCli(['asset', 'register', '--kind', 'board-firmware', '--channel', 'beta', '--file', file, '--file-name', 'board-fw-1.4.bin'], stack.env);
    expect(result.code, result.stderr).toBe(0);
    const hash = sha256(bytes);
    expect(result.json).toEqual({ sha256: hash, size: 70_000, path: `/public/board/firmware/beta/${hash}/board-fw-1.4.bin` });
    const row = await stack.db.selectFrom('board_assets').selectAll().where('sha256', '=', hash).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ kind: 'board-firmware', target: 'beta', file_name: 'board-fw-1.4.bin', size: 70_000 });
    expectBytes(await readFile(createObjectStore(stack.config).pathOf(`board-firmware/beta/${hash}`)), bytes);

    const response = await fetch(`${base}${result.json!.path as string}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/octet-stream');
    expectBytes(Buffer.from(await response.arrayBuffer()), bytes);
  }, CLI_TIMEOUT_MS);

  it('asset register refuses bad flags and files larger than the download cache, registering nothing', async () => {
    const file = path.join(work, 'small.bin');
    await writeFile(file, randomBytes(2_000));
    const rows = await rowCount();
    const refusals: Array<[string[], number, string, RegExp]> = [
      [['--kind', 'board-app', '--platform', 'macos-arm64', '--file', file, '--file-name', 'App.exe'], 2, 'invalid_flag', /--file-name.*\.dmg/],
      [['--kind', 'board-app', '--platform', 'windows-x86_64', '--file', file, '--file-name', 'App.EXE'], 2, 'invalid_flag', /--file-name/],
      [['--kind', 'board-firmware', '--channel', 'stable', '--file', file, '--file-name', '../x.bin'], 2, 'invalid_flag', /--file-name/],
      [['--kind', 'board-firmware', '--file', file, '--file-name', 'x.bin'], 2, 'missing_flag', /--channel/],
      [['--kind', 'board-firmware', '--channel', 'stable', '--platform', 'macos-arm64', '--file', file, '--file-name', 'x.bin'], 2, 'invalid_flag', /--platform/],
      [['--kind', 'board-app', '--platform', 'linux', '--file', file, '--file-name', 'x.zip'], 2, 'invalid_flag', /--platform/],
      [['--kind', 'board-thing', '--channel', 'stable', '--file', file, '--file-name', 'x.bin'], 2, 'invalid_flag', /--kind/],
      [['--kind', 'board-firmware', '--channel', 'stable', '--file', path.join(work, 'absent.bin'), '--file-name', 'x.bin'], 2, 'invalid_flag', /--file/],
    ];
    for (const [flags, code, error, message] of refusals) {
      const result = await cliHere(['asset', 'register', ...flags]);
      expect({ flags, code: result.code, error: result.error?.error }).toEqual({ flags, code, error });
      expect(result.stderr).toMatch(message);
    }
    const tooLarge = await cliHere(['asset', 'register', '--kind', 'board-firmware', '--channel', 'stable', '--file', file, '--file-name', 'x.bin'], { ...stack.config, DOWNLOAD_CACHE_MAX_BYTES: 1_999 });
    expect(tooLarge).toMatchObject({ code: 1, error: { error: 'asset_too_large' } });
    expect(await rowCount()).toBe(rows);
  });

  it('a full GET: 200, the exact bytes and headers, no chunking', async () => {
    const response = await stack.app.inject({ method: 'GET', url: app.path });
    expect(response.statusCode).toBe(200);
    expectBytes(response.rawPayload, app.bytes);
    const { date: _date, connection: _connection, 'x-request-id': requestId, ...headers } = response.headers;
    expect(requestId).toEqual(expect.any(String));
    expect(headers).toEqual({
      'content-type': 'application/x-apple-diskimage',
      'content-length': String(app.size),
      'content-disposition': 'attachment; filename="Board-App-2.1.0.dmg"',
      'accept-ranges': 'bytes',
      'cache-control': IMMUTABLE,
      etag: `"${app.sha256}"`,
      'x-content-type-options': 'nosniff',
      // The route group's CORS: any origin, and the download headers readable by a page's script.
      'access-control-allow-origin': '*',
      'access-control-expose-headers': 'etag, content-length, content-range, accept-ranges, content-disposition, retry-after',
    });
    expect(await cached()).toContain(app.sha256);

    // Over a real socket too: a Content-Length, never Transfer-Encoding.
    const real = await fetch(`${base}${app.path}`);
    expect(real.headers.get('transfer-encoding')).toBeNull();
    expect(real.headers.get('content-length')).toBe(String(app.size));
    expect(sha256(Buffer.from(await real.arrayBuffer()))).toBe(app.sha256);
  });

  it('HEAD: the same headers, no body', async () => {
    const [get, head] = [await stack.app.inject({ method: 'GET', url: app.path }), await stack.app.inject({ method: 'HEAD', url: app.path })];
    expect(head.statusCode).toBe(200);
    expect(head.rawPayload.length).toBe(0);
    const comparable = (headers: Record<string, unknown>) => {
      const { date: _date, 'x-request-id': _id, ...rest } = headers;
      return rest;
    };
    expect(comparable(head.headers)).toEqual(comparable(get.headers));
    // Range applies to GET only: a HEAD with one still describes the whole file.
    const ranged = await stack.app.inject({ method: 'HEAD', url: app.path, headers: { range: 'bytes=0-9' } });
    expect(ranged.statusCode).toBe(200);
    expect(ranged.headers['content-length']).toBe(String(app.size));
  });

  it('one range: 206 with Content-Range; If-Range and If-None-Match', async () => {
    const etag = `"${app.sha256}"`;
    const cases: Array<[string, number, number]> = [
      ['bytes=100-199', 100, 199],
      ['bytes=1048000-', 1_048_000, app.size - 1],
      ['bytes=-500', app.size - 500, app.size - 1],
      ['bytes=0-99999999', 0, app.size - 1],
    ];
    for (const [range, start, end] of cases) {
      const response = await stack.app.inject({ method: 'GET', url: app.path, headers: { range } });
      expect(response.statusCode, range).toBe(206);
      expect(response.headers['content-range']).toBe(`bytes ${start}-${end}/${app.size}`);
      expect(response.headers['content-length']).toBe(String(end - start + 1));
      expect(response.headers.etag).toBe(etag);
      expectBytes(response.rawPayload, app.bytes.subarray(start, end + 1));
    }
    const sameVersion = await stack.app.inject({ method: 'GET', url: app.path, headers: { range: 'bytes=10-19', 'if-range': etag } });
    expect(sameVersion.statusCode).toBe(206);
    const otherVersion = await stack.app.inject({ method: 'GET', url: app.path, headers: { range: 'bytes=10-19', 'if-range': '"other"' } });
    expect(otherVersion.statusCode).toBe(200);
    expectBytes(otherVersion.rawPayload, app.bytes);

    const notModified = await stack.app.inject({ method: 'GET', url: app.path, headers: { 'if-none-match': etag } });
    expect(notModified.statusCode).toBe(304);
    expect(notModified.rawPayload.length).toBe(0);
    expect(notModified.headers).toMatchObject({ etag, 'cache-control': IMMUTABLE });
  });

  it('curl --range 100-199: the exact bytes and the 206 headers', async () => {
    const out = path.join(work, 'range.out');
    const { stdout: headers } = await run('curl', ['-sS', '--range', '100-199', '-D', '-', '-o', out, `${base}${app.path}`]);
    expect(headers).toMatch(/^HTTP\/1\.1 206 /);
    expect(headers).toMatch(new RegExp(`\\r\\ncontent-range: bytes 100-199/${app.size}\\r\\n`, 'i'));
    expect(headers).toMatch(/\r\ncontent-length: 100\r\n/i);
    expect(headers).toMatch(/\r\naccept-ranges: bytes\r\n/i);
    expect(headers).not.toMatch(/transfer-encoding/i);
    expectBytes(await readFile(out), app.bytes.subarray(100, 200));
  });

  it('a download broken off and resumed with curl -C - ends as the exact file', async () => {
    const out = path.join(work, 'resumed.dmg');
    // The first attempt got 123,457 bytes before it stopped.
    await run('curl', ['-sS', '--fail', '--range', '0-123456', '-o', out, `${base}${app.path}`]);
    expect((await readFile(out)).length).toBe(123_457);
    const { stdout } = await run('curl', ['-sS', '--fail', '-C', '-', '-o', out, '-w', '%{http_code} %{size_download}', `${base}${app.path}`]);
    expect(stdout).toBe(`206 ${app.size - 123_457}`);
    expect(sha256(await readFile(out))).toBe(app.sha256);
  });

  describe('bad input: refused, nothing cached, nothing changed', () => {
    let fresh: Registered;
    beforeAll(async () => {
      // Registered but never downloaded: a refusal must not fill the cache with it.
      fresh = await register('board-app', 'macos-arm64', 'Fresh-1.0.zip', 4_096);
    });
    const shaPath = (sha: string) => `/public/board/app/macos-arm64/${sha}/Fresh-1.0.zip`;

    it.each([
      ['a sha256 of 63 characters', (f: Registered) => shaPath(f.sha256.slice(1))],
      ['an uppercase sha256', (f: Registered) => shaPath(f.sha256.toUpperCase())],
      ['a sha256 with a %2F', (f: Registered) => shaPath(`${f.sha256.slice(0, 30)}%2F${f.sha256.slice(33)}`)],
      ['.exe for macos-arm64', (f: Registered) => `/public/board/app/macos-arm64/${f.sha256}/Fresh-1.0.exe`],
      ['.ZIP (extensions are case-sensitive)', (f: Registered) => `/public/board/app/macos-arm64/${f.sha256}/Fresh-1.0.ZIP`],
      ['.dmg for windows-x86_64', (f: Registered) => `/public/board/app/windows-x86_64/${f.sha256}/Fresh-1.0.dmg`],
      ['.dmg for firmware', (f: Registered) => `/public/board/firmware/stable/${f.sha256}/Fresh-1.0.dmg`],
      ['an unknown platform', (f: Registered) => `/public/board/app/linux-x86_64/${f.sha256}/Fresh-1.0.zip`],
      ['an unknown channel', (f: Registered) => `/public/board/firmware/nightly/${f.sha256}/fw.bin`],
      ['a / in the file name', (f: Registered) => `/public/board/app/macos-arm64/${f.sha256}/a/Fresh-1.0.zip`],
      ['a %2F in the file name', (f: Registered) => `/public/board/app/macos-arm64/${f.sha256}/a%2FFresh-1.0.zip`],
      ['a NUL in the file name', (f: Registered) => `/public/board/app/macos-arm64/${f.sha256}/Fresh%00-1.0.zip`],
      ['.. as the file name', (f: Registered) => `/public/board/app/macos-arm64/${f.sha256}/..`],
      ['%2E%2E as the file name', (f: Registered) => `/public/board/app/macos-arm64/${f.sha256}/%2E%2E`],
      ['../ in the file name', (f: Registered) => `/public/board/app/macos-arm64/${f.sha256}/../../x.zip`],
      ['an empty file name', (f: Registered) => `/public/board/app/macos-arm64/${f.sha256}/`],
      ['a quote in the file name', (f: Registered) => `/public/board/app/macos-arm64/${f.sha256}/a%22b.zip`],
    ])('%s → 400', async (_what, url) => {
      // Over a raw socket, so `..` reaches the server as sent.
      const response = await leavesNothing(() => rawGet(base, url(fresh)));
      expect(response.status).toBe(400);
      expect(JSON.parse(response.body)).toMatchObject({ success: false, error: { code: 'INVALID_REQUEST', message: expect.any(String) } });
    });

    it.each(['bytes=5-1', 'bytes=0-1,5-6', 'bytes=999999999-', 'items=0-1', 'bytes=-0', 'bytes=4096-', 'bytes=a-b'])('Range: %s → 416 with Content-Range: bytes */<size>', async (range) => {
      const response = await leavesNothing(() => stack.app.inject({ method: 'GET', url: fresh.path, headers: { range } }));
      expect(response.statusCode).toBe(416);
      expect(response.headers['content-range']).toBe('bytes */4096');
      expect(response.headers['content-disposition']).toBeUndefined();
      expect(response.json()).toMatchObject({ success: false, error: { code: 'RANGE_NOT_SATISFIABLE' } });
    });

    it('the same sha256 under another platform or channel, another file name, or an unregistered sha256 → 404', async () => {
      const firmware = await register('board-firmware', 'stable', 'board-fw-2.0.bin', 3_000);
      const urls = [
        `/public/board/app/macos-x86_64/${fresh.sha256}/Fresh-1.0.zip`,
        `/public/board/app/windows-x86_64/${fresh.sha256}/Fresh-1.0.exe`,
        `/public/board/firmware/beta/${firmware.sha256}/board-fw-2.0.bin`,
        `/public/board/app/macos-arm64/${fresh.sha256}/Other-1.0.zip`,
        `/public/board/app/macos-arm64/${'0'.repeat(64)}/Fresh-1.0.zip`,
      ];
      for (const url of urls) {
        const response = await leavesNothing(() => stack.app.inject({ method: 'GET', url }));
        expect(response.statusCode, url).toBe(404);
        expect(response.json()).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
      }
      // …while the registered names answer.
      expect((await stack.app.inject({ method: 'HEAD', url: firmware.path })).statusCode).toBe(200);
    });

    it('a corrupted object in the store → 502, nothing published in the cache', async () => {
      const victim = await register('board-app', 'windows-x86_64', 'Setup-3.0.msi', 50_000);
      await writeFile(storePath(victim), randomBytes(50_000));
      const response = await leavesNothing(() => stack.app.inject({ method: 'GET', url: victim.path }));
      expect(response.statusCode).toBe(502);
      expect(response.json()).toEqual({ success: false, error: { code: 'STORAGE_ERROR', message: expect.any(String) } });
      expect(response.body).not.toContain(stack.config.DATA_DIR);
      expect(await cached()).not.toContain(victim.sha256);
      // A range request does not get around the check.
      expect((await leavesNothing(() => stack.app.inject({ method: 'GET', url: victim.path, headers: { range: 'bytes=0-9' } }))).statusCode).toBe(502);
    });

    it('the store missing the object → 404', async () => {
      const gone = await register('board-app', 'macos-x86_64', 'Gone-1.0.pkg', 10_000);
      await unlink(storePath(gone));
      const response = await leavesNothing(() => stack.app.inject({ method: 'GET', url: gone.path }));
      expect(response.statusCode).toBe(404);
      expect(response.json()).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
      expect(response.body).not.toContain(stack.config.DATA_DIR);
    });
  });
});
