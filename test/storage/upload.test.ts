import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { readdir, readFile as readDiskFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.js';
import { loadConfig } from '../../shared/config.js';
import { createProject } from '../../shared/identity/service.js';
import { createFileStore } from '../../shared/storage/file-store.js';
import { readFile, readFileBuffer } from '../../shared/storage/service.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const LIMIT = 4096; // the second app's STORAGE_MAX_UPLOAD_BYTES, so the 413 tests stay small

describe('POST /storage/:projectId/upload', () => {
  let stack: TestStack;
  let make: ReturnType<typeof credentialFactory>;
  let small: Awaited<ReturnType<typeof buildApp>>;
  let baseUrl: string;
  let smallUrl: string;
  let ownerId: string;
  let teamId: string;
  let projectId: string;
  let jwt: string;
  let apiKey: { id: string; token: string };
  let filesDir: string;

  const listen = async (app: typeof small) => {
    await app.listen({ port: 0, host: '127.0.0.1' });
    return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  };

  async function upload(options: { token?: string; project?: string; form?: FormData; body?: string; contentType?: string; url?: string }) {
    const headers: Record<string, string> = {};
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.contentType) headers['content-type'] = options.contentType;
    const res = await fetch(`${options.url ?? baseUrl}/storage/${options.project ?? projectId}/upload`, {
      method: 'POST', headers, body: options.form ?? options.body,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  const formWith = (...files: Array<{ field?: string; bytes: Buffer; name?: string; type?: string }>) => {
    const form = new FormData();
    form.append('note', 'a text field is ignored');
    for (const f of files) form.append(f.field ?? 'file', new Blob([f.bytes], { type: f.type ?? 'application/octet-stream' }), f.name ?? 'data.bin');
    return form;
  };

  /** Every object in the store (the `.tmp` folder included), relative to DATA_DIR/files. */
  async function storedObjects(): Promise<string[]> {
    const entries = await readdir(filesDir, { recursive: true, withFileTypes: true }).catch(() => []);
    return entries.filter((e) => e.isFile()).map((e) => path.relative(filesDir, path.join(e.parentPath, e.name))).sort();
  }
  const fileRows = () => stack.db.selectFrom('files').selectAll().execute();

  /** Runs `action` and checks it stored nothing: no new row, no new object on disk. */
  async function expectNothingStored(action: () => Promise<{ status: number; body: { error: string; message?: string; maxBytes?: number } }>, status: number, error: string) {
    const [rowsBefore, objectsBefore] = [await fileRows(), await storedObjects()];
    const res = await action();
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(res.body.error).toBe(error);
    expect(await fileRows()).toEqual(rowsBefore);
    expect(await storedObjects()).toEqual(objectsBefore);
    return res;
  }

  beforeAll(async () => {
    stack = await createTestStack();
    make = credentialFactory(stack);
    const owner = await make.user('owner');
    ownerId = owner.id;
    teamId = (await make.team(owner.id)).id;
    projectId = (await createProject(stack.db, { teamId, name: 'Uploads' })).id;
    jwt = await make.jwt(owner.id);
    apiKey = await make.apiKey(teamId, owner.id);
    filesDir = path.join(stack.config.DATA_DIR, 'files');
    baseUrl = await listen(stack.app);
    // Same database and DATA_DIR, lower upload cap.
    small = await buildApp({ ...stack.deps, config: { ...stack.config, STORAGE_MAX_UPLOAD_BYTES: LIMIT } }, { logger: false });
    smallUrl = await listen(small);
  });
  afterAll(async () => {
    await small?.close();
    await stack?.close();
  });

  it('stores the file: 201 with its handle, a files row and the bytes on disk', async () => {
    const bytes = randomBytes(200_000);
    const res = await upload({ token: jwt, form: formWith({ bytes, name: 'report.pdf', type: 'application/pdf' }) });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const { fileId } = res.body;
    expect(res.body).toEqual({
      fileId: expect.stringMatching(/^[0-9a-f-]{36}$/), handle: `wf-file:${fileId}`, size: bytes.length,
      contentType: 'application/pdf', sha256: sha256(bytes), originalName: 'report.pdf',
    });
    const row = await stack.db.selectFrom('files').selectAll().where('id', '=', fileId).executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      project_id: projectId, team_id: teamId, uploaded_by: ownerId, api_key_id: null, size: bytes.length,
      content_type: 'application/pdf', original_name: 'report.pdf', sha256: sha256(bytes),
      storage_key: `${fileId.slice(0, 2)}/${fileId}`, deleted_at: null,
    });
    const onDisk = await readDiskFile(path.join(filesDir, fileId.slice(0, 2), fileId));
    expect(sha256(onDisk)).toBe(sha256(bytes));
    expect(await readdir(path.join(filesDir, '.tmp'))).toEqual([]);
  });

  it('accepts an API key of the project team (recorded as its creator and the key)', async () => {
    const bytes = Buffer.from('hello from a key');
    const res = await upload({ token: apiKey.token, form: formWith({ bytes, name: 'hello.txt', type: 'text/plain' }) });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const row = await stack.db.selectFrom('files').selectAll().where('id', '=', res.body.fileId).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ uploaded_by: ownerId, api_key_id: apiKey.id, size: bytes.length, content_type: 'text/plain', sha256: sha256(bytes) });
  });

  it('X-API-Key works too; a member who is not the owner may upload', async () => {
    const member = await make.user('member');
    await stack.db.insertInto('team_members').values({ team_id: teamId, user_id: member.id, role: 'member' }).execute();
    const res = await upload({ token: await make.jwt(member.id), form: formWith({ bytes: Buffer.from('m') }) });
    expect(res.status).toBe(201);
    const viaHeader = await fetch(`${baseUrl}/storage/${projectId}/upload`, {
      method: 'POST', headers: { 'x-api-key': apiKey.token }, body: formWith({ bytes: Buffer.from('x') }),
    });
    expect(viaHeader.status).toBe(201);
  });

  it('never uses the client file name for the path', async () => {
    const bytes = Buffer.from('sneaky');
    const res = await upload({ token: jwt, form: formWith({ bytes, name: '../../../../etc/evil.sh', type: 'Text/Plain; charset=utf-8' }) });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ originalName: 'evil.sh', contentType: 'text/plain' });
    expect(await storedObjects()).not.toContainEqual(expect.stringContaining('evil'));
    expect(await readDiskFile(path.join(filesDir, res.body.fileId.slice(0, 2), res.body.fileId), 'utf8')).toBe('sneaky');
  });

  it('an empty file is a file', async () => {
    const res = await upload({ token: jwt, form: formWith({ bytes: Buffer.alloc(0), name: 'empty' }) });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ size: 0, sha256: sha256(Buffer.alloc(0)) });
  });

  it('the run engine reads a file back by either handle form, only within its project', async () => {
    const bytes = randomBytes(5000);
    const { body } = await upload({ token: jwt, form: formWith({ bytes, name: 'in.bin' }) });
    const store = createFileStore(stack.config);
    for (const handle of [body.handle, `storage://${body.fileId}`]) {
      const read = await readFileBuffer(stack.db, store, handle, projectId, { maxBytes: 10_000 });
      expect(read).toMatchObject({ fileId: body.fileId, projectId, size: 5000, originalName: 'in.bin', sha256: sha256(bytes) });
      expect(sha256(read.bytes)).toBe(sha256(bytes));
    }
    const other = await createProject(stack.db, { teamId, name: 'Other' });
    await expect(readFile(stack.db, store, body.handle, other.id)).rejects.toMatchObject({ status: 404, error: 'File not found' });
    await expect(readFile(stack.db, store, `wf-file:${randomUUID()}`, projectId)).rejects.toMatchObject({ status: 404, error: 'File not found' });
    await expect(readFile(stack.db, store, `file:${body.fileId}`, projectId)).rejects.toMatchObject({ status: 400, error: 'invalid_file_handle' });
    await expect(readFileBuffer(stack.db, store, body.handle, projectId, { maxBytes: 4999 })).rejects.toMatchObject({ status: 413, error: 'file_too_large' });
  });

  describe('size limit (STORAGE_MAX_UPLOAD_BYTES)', () => {
    it('defaults to 50 MiB', () => {
      expect(loadConfig({}).STORAGE_MAX_UPLOAD_BYTES).toBe(50 * 1024 * 1024);
    });

    it('accepts a file of exactly the limit', async () => {
      const bytes = randomBytes(LIMIT);
      const res = await upload({ url: smallUrl, token: jwt, form: formWith({ bytes }) });
      expect(res.status).toBe(201);
      expect(res.body.size).toBe(LIMIT);
    });

    it('refuses one byte more with 413 file_too_large and stores nothing', async () => {
      const res = await expectNothingStored(
        () => upload({ url: smallUrl, token: jwt, form: formWith({ bytes: randomBytes(LIMIT + 1) }) }), 413, 'file_too_large');
      expect(res.body).toMatchObject({ maxBytes: LIMIT });
      await expectNothingStored(() => upload({ url: smallUrl, token: jwt, form: formWith({ bytes: randomBytes(LIMIT * 50) }) }), 413, 'file_too_large');
    });

    it('refuses a large file on the default app as well (nothing stored)', async () => {
      const big = await buildApp({ ...stack.deps, config: { ...stack.config, STORAGE_MAX_UPLOAD_BYTES: 1024 * 1024 } }, { logger: false });
      try {
        const url = await listen(big);
        await expectNothingStored(() => upload({ url, token: jwt, form: formWith({ bytes: randomBytes(3 * 1024 * 1024) }) }), 413, 'file_too_large');
      } finally {
        await big.close();
      }
    });
  });

  describe('bad input stores nothing', () => {
    it('no file part: 400 file_required', async () => {
      const form = new FormData();
      form.append('file', 'just text, not a file');
      await expectNothingStored(() => upload({ token: jwt, form }), 400, 'file_required');
      await expectNothingStored(() => upload({ token: jwt, form: new FormData() }), 400, 'file_required');
    });

    it('not multipart at all: 400 file_required', async () => {
      await expectNothingStored(() => upload({ token: jwt, body: JSON.stringify({ file: 'x' }), contentType: 'application/json' }), 400, 'file_required');
    });

    it('a file in another field: 400 file_required naming the field', async () => {
      const res = await expectNothingStored(() => upload({ token: jwt, form: formWith({ field: 'upload', bytes: Buffer.from('x') }) }), 400, 'file_required');
      expect(res.body.message).toContain('"upload"');
    });

    it('a second file: 400 too_many_files (the first is not kept either)', async () => {
      await expectNothingStored(() => upload({ token: jwt, form: formWith({ bytes: randomBytes(1000) }, { bytes: randomBytes(1000) }) }), 400, 'too_many_files');
      await expectNothingStored(() => upload({ token: jwt, form: formWith({ bytes: randomBytes(10) }, { field: 'other', bytes: randomBytes(10) }) }), 400, 'too_many_files');
    });

    it('a malformed multipart body: 400 invalid_multipart', async () => {
      await expectNothingStored(() => upload({
        token: jwt, contentType: 'multipart/form-data; boundary=XYZ',
        body: '--XYZ\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n\r\npartial data with no closing boundary',
      }), 400, 'invalid_multipart');
    });

    it('a project the caller cannot use answers 404 Project not found, like a missing one', async () => {
      const form = () => formWith({ bytes: Buffer.from('x') });
      const stranger = await make.user('stranger');
      const strangerTeam = (await make.team(stranger.id)).id;
      const strangerKey = await make.apiKey(strangerTeam, stranger.id);
      const deleted = await createProject(stack.db, { teamId, name: 'Gone' });
      await stack.db.updateTable('projects').set({ deleted_at: new Date() }).where('id', '=', deleted.id).execute();
      for (const [token, project] of [
        [await make.jwt(stranger.id), projectId], // not a member of the project's team
        [strangerKey.token, projectId], // an API key of another team
        [jwt, randomUUID()], // no such project
        [jwt, deleted.id], // deleted project
      ] as const) {
        const res = await expectNothingStored(() => upload({ token, project, form: form() }), 404, 'Project not found');
        expect(res.body.message).toBe('Project not found');
      }
    });

    it('a malformed project id: 400 invalid_request', async () => {
      await expectNothingStored(() => upload({ token: jwt, project: 'not-a-uuid', form: formWith({ bytes: Buffer.from('x') }) }), 400, 'invalid_request');
    });

    it('no or a bad credential: 401; an OAuth token: 403', async () => {
      await expectNothingStored(() => upload({ form: formWith({ bytes: Buffer.from('x') }) }), 401, 'Missing or invalid authorization header');
      const oauth = await make.oauthToken(ownerId, ['profile:read']);
      await expectNothingStored(() => upload({ token: oauth.token, form: formWith({ bytes: Buffer.from('x') }) }), 403, 'This endpoint only accepts JWT or API key authentication');
    });
  });
});
