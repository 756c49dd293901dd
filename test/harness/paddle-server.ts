import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local Paddle Billing API on 127.0.0.1: `POST /transactions` checks the bearer key and answers
 * Paddle's JSON shape (`{ data: { id, status, checkout: { url }, … }, meta: { request_id } }`, errors
 * `{ error: { type, code, detail, documentation_url }, meta }`). `env` configures the service for it.
 */
export interface PaddleServerRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  /** The parsed JSON body; null when it was not JSON. */
  body: unknown;
}

export interface PaddleServer {
  url: string;
  apiKey: string;
  /** PADDLE_API_BASE_URL, PADDLE_API_KEY and a PADDLE_WEBHOOK_SECRET. */
  env: Record<string, string>;
  requests: PaddleServerRequest[];
  /** The next `POST /transactions` answers `status` with a Paddle error body. */
  failNext(status: number, code?: string): void;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;
const isJson = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

export async function startPaddleServer(): Promise<PaddleServer> {
  const apiKey = `pdl_sdbx_apikey_${randomBytes(16).toString('hex')}`;
  const requests: PaddleServerRequest[] = [];
  const failures: Array<{ status: number; code: string }> = [];

  const error = (status: number, type: string, code: string, detail: string) =>
    ({ status, body: { error: { type, code, detail, documentation_url: `https://developer.paddle.com/errors/shared/${code}` }, meta: { request_id: randomBytes(8).toString('hex') } } });

  function transaction(body: unknown): { status: number; body: Json } {
    const item = isJson(body) && Array.isArray(body.items) && isJson(body.items[0]) ? body.items[0] : null;
    const price = item && isJson(item.price) ? item.price : null;
    const unitPrice = price && isJson(price.unit_price) ? price.unit_price : null;
    if (!price || !unitPrice || typeof unitPrice.amount !== 'string' || !/^\d+$/.test(unitPrice.amount) || typeof unitPrice.currency_code !== 'string') {
      return error(400, 'request_error', 'bad_request', 'items[0].price.unit_price is required');
    }
    const id = `txn_${randomBytes(13).toString('hex')}`;
    return {
      status: 201,
      body: {
        data: {
          id, status: 'ready', currency_code: unitPrice.currency_code, origin: 'api', collection_mode: 'automatic',
          custom_data: isJson(body) ? body.custom_data ?? null : null,
          items: [{ price: { ...price, id: `pri_${randomBytes(13).toString('hex')}` }, quantity: item!.quantity }],
          checkout: { url: `https://pay.paddle.example/checkout?_ptxn=${id}` },
          created_at: new Date().toISOString(),
        },
        meta: { request_id: randomBytes(8).toString('hex') },
      },
    };
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let body: unknown = null;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        // recorded as null; answered bad_request
      }
      const method = req.method ?? 'GET';
      const path = req.url ?? '/';
      requests.push({ method, path, authorization: req.headers.authorization, body });
      let answer: { status: number; body: Json };
      if (req.headers.authorization !== `Bearer ${apiKey}`) answer = error(403, 'request_error', 'forbidden', 'You aren\'t permitted to perform this request.');
      else if (method !== 'POST' || path !== '/transactions') answer = error(404, 'request_error', 'not_found', `${method} ${path}`);
      else if (failures.length > 0) {
        const { status, code } = failures.shift()!;
        answer = error(status, status >= 500 ? 'api_error' : 'request_error', code, 'failNext');
      } else answer = transaction(body);
      const text = JSON.stringify(answer.body);
      res.writeHead(answer.status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    apiKey,
    env: { PADDLE_API_BASE_URL: url, PADDLE_API_KEY: apiKey, PADDLE_WEBHOOK_SECRET: `pdl_ntfset_${randomBytes(16).toString('hex')}` },
    requests,
    failNext(status, code = status >= 500 ? 'internal_error' : 'bad_request') {
      failures.push({ status, code });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
