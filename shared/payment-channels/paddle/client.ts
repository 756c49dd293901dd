import type { Config } from '../../config.js';

// The one Paddle Billing API call we make: create a transaction for a non-catalog price (the price
// and product travel inline, so nothing has to be kept in sync with Paddle's catalog). Paddle's
// checkout then collects the payment; its webhook (`transaction.completed`) tells us, with our order
// number back in `custom_data.orderId`.

export interface PaddleTransactionRequest {
  /** Our order number (`WFB…`): `custom_data.orderId`, how the webhook finds the order. */
  orderId: string;
  /** Shown to the buyer at checkout. */
  name: string;
  /** Internal description of the price (Paddle does not show it to the buyer). */
  description: string;
  /** Minor units of `currency`. */
  amount: number;
  currency: string;
}

export interface PaddleTransaction {
  transactionId: string;
  /** Paddle's hosted checkout for this transaction (`…?_ptxn=txn_…`). */
  checkoutUrl: string;
}

/** Paddle refused the request, answered something unusable, or could not be reached (`status` null). */
export class PaddleApiError extends Error {
  constructor(readonly status: number | null, readonly code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PaddleApiError';
  }
}

export interface PaddleClientOptions {
  /** E.g. the service's SSRF-guarded fetch; default global fetch. */
  fetch?: typeof fetch;
  /** Per request, covering the body; default 10 s. */
  timeoutMs?: number;
}

/** The API settings; null when `PADDLE_API_KEY` is missing (checkout answers 503 NOT_CONFIGURED). */
export function paddleApiOf(config: Pick<Config, 'PADDLE_API_BASE_URL' | 'PADDLE_API_KEY'>): { baseUrl: string; apiKey: string } | null {
  if (!config.PADDLE_API_KEY) return null;
  return { baseUrl: config.PADDLE_API_BASE_URL.replace(/\/+$/, ''), apiKey: config.PADDLE_API_KEY };
}

type Json = Record<string, unknown>;
const isJson = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

export async function createPaddleTransaction(
  api: { baseUrl: string; apiKey: string },
  request: PaddleTransactionRequest,
  options: PaddleClientOptions = {},
): Promise<PaddleTransaction> {
  const fetchImpl = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const body = {
    items: [{
      price: {
        description: request.description,
        name: request.name,
        // Paddle takes amounts as strings of the lowest denomination.
        unit_price: { amount: String(request.amount), currency_code: request.currency },
        product: { name: request.name, tax_category: 'standard' },
      },
      quantity: 1,
    }],
    custom_data: { orderId: request.orderId },
  };

  let status: number;
  let text: string;
  try {
    const response = await fetchImpl(`${api.baseUrl}/transactions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${api.apiKey}`, 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    status = response.status;
    text = await response.text();
  } catch (error) {
    const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
    throw new PaddleApiError(null, timedOut ? 'TIMEOUT' : 'NETWORK_ERROR', `POST /transactions: ${timedOut ? `no answer within ${timeoutMs} ms` : String(error)}`, { cause: error });
  }

  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (status < 200 || status > 299) {
    // Paddle's error shape: { error: { type, code, detail, documentation_url }, meta }.
    const error = isJson(parsed) && isJson(parsed.error) ? parsed.error : {};
    const code = typeof error.code === 'string' ? error.code : `HTTP_${status}`;
    const detail = typeof error.detail === 'string' ? error.detail : text.slice(0, 200);
    throw new PaddleApiError(status, code, `POST /transactions: ${detail}`);
  }
  const data = isJson(parsed) && isJson(parsed.data) ? parsed.data : null;
  const checkout = data && isJson(data.checkout) ? data.checkout : null;
  // A transaction without a checkout URL means the account has no default payment link: nothing to send the buyer to.
  if (!data || typeof data.id !== 'string' || !checkout || typeof checkout.url !== 'string' || !checkout.url) {
    throw new PaddleApiError(status, 'BAD_BODY', 'POST /transactions: answer without data.id or data.checkout.url');
  }
  return { transactionId: data.id, checkoutUrl: checkout.url };
}
