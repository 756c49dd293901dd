import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { anonKeysOf } from '../../shared/data-api/identity.js';
import { createObjectStore } from '../../shared/storage/object-store.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

// The data API's storage at /storage/v1 (CONTRACTS.md "Frontend data access"): the real supabase-js
// upload/getPublicUrl/remove against the API over HTTP, and raw HTTP for what the client would not
// send. Every refusal checks its status, the storage API's error shape, and that nothing changed.
const MAX_BYTES = 4096;

let stack: TestStack;
let origin: string;
let anonKey: string;
const users: Record<'alice' | 'bob' | 'admin', { id: string; jwt: string }> = {} as never;

const client = (who?: keyof typeof users): SupabaseClient =>
  createClient(origin, anonKey, { ...(who ? { accessToken: async () => users[who].jwt } : {}), realtime: { transport: WebSocket as never } });

async function raw(path: string, init: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {}) {
  const response = await fetch(`${origin}${path}`, { method: init.method ?? 'GET', headers: init.headers, body: init.body });
  const bytes = Buffer.from(await response.arrayBuffer());
  const isJson = response.headers.get('content-type')?.startsWith('application/json') ?? false;
  return { status: response.status, headers: response.headers, bytes, json: isJson && bytes.length > 0 ? JSON.parse(bytes.toString()) as Record<string, unknown> : null };
}
const auth = (who: keyof typeof users) => ({ apikey: anonKey, authorization: `Bearer ${users[who].jwt}` });
const objectRow = (name: string) => stack.db.selectFrom('storage_objects').selectAll().where('bucket_id', '=', 'banners').where('name', '=', name).executeTakeFirst();
const publicObject = (name: string, headers: Record<string, string> = {}) => raw(`/storage/v1/object/public/banners/${name}`, { headers });
const uniqueName = (folder = 'team') => `${folder}/${randomUUID()}.png`;

/** Alice's object, uploaded through supabase-js. */
async function aliceUploads(name: string, bytes = Buffer.from('alice-bytes')) {
  const { data, error } = await client('alice').storage.from('banners').upload(name, bytes, { contentType: 'image/png' });
  expect(error).toBeNull();
  return data!;
}

beforeAll(async () => {
  stack = await createTestStack({ STORAGE_MAX_UPLOAD_BYTES: String(MAX_BYTES) });
  const make = credentialFactory(stack);
  for (const name of ['alice', 'bob', 'admin'] as const) {
    const user = await make.user(name);
    users[name] = { id: user.id, jwt: await make.jwt(user.id) };
  }
  await stack.db.updateTable('users').set({ is_platform_admin: true }).where('id', '=', users.admin.id).execute();
  await stack.app.listen({ port: 0, host: '127.0.0.1' });
  origin = `http://127.0.0.1:${(stack.app.server.address() as AddressInfo).port}`;
  anonKey = anonKeysOf(stack.deps.secrets).current!;
}, 60_000);
afterAll(async () => { await stack?.close(); });

describe('storage with supabase-js', () => {
  it('upload (raw bytes) → { path, id, fullPath }; getPublicUrl serves it to anyone with its type, cache and ranges', async () => {
    const name = uniqueName();
    const data = await aliceUploads(name, Buffer.from('0123456789'));
    const row = await objectRow(name);
    expect(data).toEqual({ path: name, id: row!.id, fullPath: `banners/${name}` });
    expect(row).toMatchObject({ owner_id: users.alice.id, content_type: 'image/png', cache_control: 'max-age=3600', size: 10 });

    const { data: { publicUrl } } = client().storage.from('banners').getPublicUrl(name);
    expect(publicUrl).toBe(`${origin}/storage/v1/object/public/banners/${name}`);
    const served = await fetch(publicUrl); // no key, no token: the bucket is public
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/png');
    expect(served.headers.get('cache-control')).toBe('max-age=3600');
    expect(Buffer.from(await served.arrayBuffer()).toString()).toBe('0123456789');

    const part = await publicObject(name, { range: 'bytes=2-4' });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe('bytes 2-4/10');
    expect(part.bytes.toString()).toBe('234');
    expect((await publicObject(name, { range: 'bytes=50-60' })).status).toBe(416);
  });

  it('upload of a Blob goes as a multipart form (cacheControl field, file part); its type and cache are kept', async () => {
    const name = uniqueName('forms');
    const { data, error } = await client('bob').storage.from('banners')
      .upload(name, new Blob(['<svg/>'], { type: 'image/svg+xml' }), { cacheControl: '60' });
    expect(error).toBeNull();
    expect(data!.fullPath).toBe(`banners/${name}`);
    const served = await publicObject(name);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/svg+xml');
    expect(served.headers.get('cache-control')).toBe('max-age=60');
    expect(served.bytes.toString()).toBe('<svg/>');
  });

  it('a content type with parameters keeps them (supabase-js\'s default text/plain;charset=UTF-8); a type in capitals is lowercased', async () => {
    const name = uniqueName('text');
    const { error } = await client('alice').storage.from('banners').upload(name, Buffer.from('héllo'));
    expect(error).toBeNull();
    expect((await publicObject(name)).headers.get('content-type')).toBe('text/plain;charset=UTF-8');
    const odd = uniqueName('odd');
    const res = await raw(`/storage/v1/object/banners/${odd}`, { method: 'POST', headers: { ...auth('alice'), 'content-type': 'IMAGE/PNG' }, body: 'x' });
    expect(res.status).toBe(200);
    expect((await publicObject(odd)).headers.get('content-type')).toBe('image/png');
  });

  it('the uploader overwrites with upsert or update (same id, new bytes); without upsert a taken name is 409 and unchanged', async () => {
    const name = uniqueName();
    const first = await aliceUploads(name);
    const { error: duplicate } = await client('alice').storage.from('banners').upload(name, Buffer.from('other'), { contentType: 'image/png' });
    expect(duplicate).toMatchObject({ statusCode: '409', message: 'The resource already exists' });
    expect((await publicObject(name)).bytes.toString()).toBe('alice-bytes');

    const { data: upserted, error } = await client('alice').storage.from('banners').upload(name, Buffer.from('v2'), { contentType: 'image/webp', upsert: true });
    expect(error).toBeNull();
    expect(upserted!.id).toBe(first.id);
    const v2 = await publicObject(name);
    expect([v2.bytes.toString(), v2.headers.get('content-type')]).toEqual(['v2', 'image/webp']);

    const { error: updateError } = await client('alice').storage.from('banners').update(name, Buffer.from('v3'), { contentType: 'image/png' });
    expect(updateError).toBeNull();
    expect((await publicObject(name)).bytes.toString()).toBe('v3');
    // The replaced versions' bytes are gone from the object store: one key stays.
    const row = await objectRow(name);
    expect(await createObjectStore(stack.config).stat(row!.storage_key)).toEqual({ size: 2 });
  });

  it('remove answers the removed objects; the public URL then answers 404 and the bytes are gone', async () => {
    const name = uniqueName();
    await aliceUploads(name);
    const key = (await objectRow(name))!.storage_key;
    const { data, error } = await client('alice').storage.from('banners').remove([name, 'team/never-uploaded.png']);
    expect(error).toBeNull();
    expect(data).toHaveLength(1);
    expect(data![0]).toMatchObject({ name, bucket_id: 'banners', owner: users.alice.id, metadata: { size: 11, mimetype: 'image/png' } });
    expect(await objectRow(name)).toBeUndefined();
    expect(await createObjectStore(stack.config).stat(key)).toBeNull();
    const gone = await publicObject(name);
    expect(gone.status).toBe(404);
    expect(gone.json).toEqual({ statusCode: '404', code: 'NoSuchKey', error: 'not_found', message: 'Object not found' });
  });

  it('a platform administrator may remove anyone\'s object', async () => {
    const name = uniqueName();
    await aliceUploads(name);
    const { data, error } = await client('admin').storage.from('banners').remove([name]);
    expect(error).toBeNull();
    expect(data!.map((o) => o.name)).toEqual([name]);
    expect(await objectRow(name)).toBeUndefined();
  });
});

describe('storage refusals change nothing', () => {
  const upload = (name: string, headers: Record<string, string>, body: string | Buffer = 'evil', method = 'POST') =>
    raw(`/storage/v1/object/banners/${name}`, { method, headers: { 'content-type': 'image/png', ...headers }, body });
  const remove = (prefixes: unknown, headers: Record<string, string>) =>
    raw('/storage/v1/object/banners', { method: 'DELETE', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ prefixes }) });
  const objectCount = async () => (await stack.db.selectFrom('storage_objects').select('id').execute()).length;

  it('an upload with the anon key alone: 403 (also as Bearer, as supabase-js sends it), nothing stored', async () => {
    const name = uniqueName();
    const before = await objectCount();
    for (const headers of [{ apikey: anonKey }, { apikey: anonKey, authorization: `Bearer ${anonKey}` }] as Array<Record<string, string>>) {
      const res = await upload(name, headers);
      expect(res.status).toBe(403);
      expect(res.json).toMatchObject({ statusCode: '403', code: 'AccessDenied', error: 'Unauthorized' });
    }
    const { error } = await client().storage.from('banners').upload(name, Buffer.from('x'));
    expect(error).toMatchObject({ statusCode: '403' });
    expect(await objectRow(name)).toBeUndefined();
    expect(await objectCount()).toBe(before);
  });

  it('no key, a wrong key or a forged token: 401', async () => {
    const name = uniqueName();
    for (const headers of [{}, { apikey: 'wfd-anon-wrong' }, { apikey: anonKey, authorization: 'Bearer not.a.jwt' }, { authorization: `Bearer ${users.alice.jwt}` }] as Array<Record<string, string>>) {
      const res = await upload(name, headers);
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(res.json).toMatchObject({ statusCode: '401', code: 'InvalidJWT' });
    }
    expect(await objectRow(name)).toBeUndefined();
  });

  it('overwriting another user\'s object (upsert or update): 403, bytes and row unchanged', async () => {
    const name = uniqueName();
    await aliceUploads(name);
    const before = await objectRow(name);
    expect((await upload(name, { ...auth('bob'), 'x-upsert': 'true' })).status).toBe(403);
    const put = await upload(name, auth('bob'), 'evil', 'PUT');
    expect(put.status).toBe(403);
    expect(put.json).toMatchObject({ statusCode: '403', code: 'AccessDenied', message: 'Only the uploader or a platform administrator may overwrite this object' });
    const { error } = await client('bob').storage.from('banners').upload(name, Buffer.from('evil'), { upsert: true });
    expect(error).toMatchObject({ statusCode: '403' });
    expect(await objectRow(name)).toEqual(before);
    expect((await publicObject(name)).bytes.toString()).toBe('alice-bytes');
  });

  it('removing another user\'s banner: 403, it stays; with one of one\'s own in the same call neither is removed', async () => {
    const alices = uniqueName();
    const bobs = uniqueName();
    await aliceUploads(alices);
    await client('bob').storage.from('banners').upload(bobs, Buffer.from('bob'), { contentType: 'image/png' });
    const res = await remove([alices], auth('bob'));
    expect(res.status).toBe(403);
    expect(res.json).toMatchObject({ statusCode: '403', code: 'AccessDenied', message: 'Only the uploader or a platform administrator may remove this object' });
    const { data, error } = await client('bob').storage.from('banners').remove([bobs, alices]);
    expect(data).toBeNull();
    expect(error).toMatchObject({ statusCode: '403' });
    expect(await objectRow(alices)).toBeDefined();
    expect(await objectRow(bobs)).toBeDefined();
    expect((await publicObject(alices)).status).toBe(200);
  });

  it('remove with the anon key alone: 403; a body without prefixes: 400; nothing removed', async () => {
    const name = uniqueName();
    await aliceUploads(name);
    expect((await remove([name], { apikey: anonKey })).status).toBe(403);
    const bad = await raw('/storage/v1/object/banners', { method: 'DELETE', headers: { ...auth('alice'), 'content-type': 'application/json' }, body: '{"paths":["x"]}' });
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ statusCode: '400', code: 'InvalidRequest' });
    expect(await objectRow(name)).toBeDefined();
  });

  it('an operation outside the subset (list, a private download, signed URLs): 400 naming it in the storage shape', async () => {
    const { data, error } = await client('alice').storage.from('banners').list('team');
    expect(data).toBeNull();
    expect(error).toMatchObject({ statusCode: '400' });
    for (const [method, path] of [['GET', '/storage/v1/object/banners/team/x.png'], ['POST', '/storage/v1/object/sign/banners/team/x.png'], ['GET', '/storage/v1/bucket']] as const) {
      const res = await raw(path, { method, headers: auth('alice') });
      expect(res.status, path).toBe(400);
      expect(res.json).toMatchObject({ statusCode: '400', code: 'InvalidRequest' });
      expect(String(res.json?.message)).toContain(`Unsupported by this data API's storage: ${method} ${path}`);
    }
  });

  it('another bucket 404, a bad name 400, over the size limit 413 (declared or counted), updating a missing object 404: nothing stored', async () => {
    const before = await objectCount();
    const otherBucket = await raw(`/storage/v1/object/avatars/${uniqueName()}`, { method: 'POST', headers: { ...auth('alice'), 'content-type': 'image/png' }, body: 'x' });
    expect([otherBucket.status, otherBucket.json]).toEqual([404, { statusCode: '404', code: 'NoSuchBucket', error: 'Bucket not found', message: 'Bucket not found' }]);
    const badName = await upload('team//double-slash.png', auth('alice'));
    expect([badName.status, badName.json?.code]).toEqual([400, 'InvalidKey']);
    const big = await upload(uniqueName(), auth('alice'), Buffer.alloc(MAX_BYTES + 1, 1));
    expect([big.status, big.json?.code]).toEqual([413, 'EntityTooLarge']);
    // Announced small, sent chunked: still refused by the count of bytes.
    const { error } = await client('alice').storage.from('banners').upload(uniqueName(), new Blob([Buffer.alloc(MAX_BYTES + 10, 2)]));
    expect(error).toMatchObject({ statusCode: '413' });
    expect((await upload(uniqueName(), auth('alice'), 'x', 'PUT')).status).toBe(404);
    expect(await objectCount()).toBe(before);
  });
});
