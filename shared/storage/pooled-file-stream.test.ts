import { createHash, randomBytes } from 'node:crypto';
import { openSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PooledFileStream } from './pooled-file-stream.js';

// Buffers are reused once the response has handed their bytes to the kernel: a buffer reused too
// early would corrupt a download. Many concurrent responses, some read slowly, must each arrive exact.
describe('PooledFileStream', () => {
  const bytes = randomBytes(6 * 1024 * 1024 + 12_345);
  let dir: string;
  let server: http.Server;
  let base: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'pooled-stream-'));
    const file = path.join(dir, 'blob');
    await writeFile(file, bytes);
    server = http.createServer((request, response) => {
      const [start, end] = (request.url ?? '/0/0').slice(1).split('/').map(Number) as [number, number];
      response.writeHead(200, { 'content-length': String(end - start + 1) });
      // A raw descriptor, as the download cache hands out: the stream closes it.
      new PooledFileStream(openSync(file, 'r'), start, end, response).pipe(response);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.close();
    await rm(dir, { recursive: true, force: true });
  });

  const sha = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

  async function download(start: number, end: number, slow: boolean): Promise<Buffer> {
    const response = await fetch(`${base}/${start}/${end}`);
    const chunks: Buffer[] = [];
    for await (const chunk of response.body!) {
      chunks.push(Buffer.from(chunk as Uint8Array));
      // A slow reader keeps the server's socket queue full, so buffers wait there to be recycled.
      if (slow && chunks.length % 8 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    return Buffer.concat(chunks);
  }

  it('streams whole files and ranges exactly, with 24 responses in flight at once', async () => {
    const ranges: Array<[number, number]> = [[0, bytes.length - 1], [1, 1_048_576], [1_048_575, 3_500_000], [bytes.length - 10, bytes.length - 1]];
    const jobs = Array.from({ length: 24 }, (_, i) => ranges[i % ranges.length]!).map(([start, end], i) =>
      download(start, end, i % 3 === 0).then((got) => ({ got, want: bytes.subarray(start, end + 1) })));
    for (const { got, want } of await Promise.all(jobs)) {
      expect(got.length).toBe(want.length);
      expect(sha(got)).toBe(sha(want));
    }
  });
});
