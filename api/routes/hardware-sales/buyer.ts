import type { FastifyRequest } from 'fastify';
import { accessMatrix } from '../../../shared/credentials/access-matrix.js';
import { authMessages } from '../../../shared/credentials/principal.js';
import { AppError } from '../../../shared/errors.js';
import { accountPhone, verifyPhoneToken } from '../../../shared/hardware-sales/service.js';
import type { AppDeps } from '../../deps.js';
import { authorize } from '../../plugins/auth.js';

/**
 * Who is buying on the public hardware endpoints (spec §4.8, §5.3): a login JWT or an OAuth token
 * with `orders:checkout` in `Authorization`, or else a `phoneToken` in the body. `phone` is the
 * verified phone when there is one (the token's, or the account's own).
 */
export interface Buyer {
  userId: string;
  phone: string | null;
  via: 'jwt' | 'oauth' | 'phone';
}

// The public envelope carries a code: the §5.4 texts stay as the message.
const unauthorized = (message: string) => new AppError(401, 'UNAUTHORIZED', message);
function asPublicError(error: unknown): never {
  if (error instanceof AppError && (error.status === 401 || error.status === 403)) {
    throw new AppError(error.status, error.status === 401 ? 'UNAUTHORIZED' : 'FORBIDDEN', error.message);
  }
  throw error;
}

const bearer = (request: FastifyRequest): string | null | undefined => {
  const header = request.headers.authorization;
  if (header === undefined) return undefined;
  return /^Bearer[ ]+(\S+)\s*$/i.exec(header)?.[1] ?? null;
};

/** The buyer, or null when the caller sent no identity at all (a quote may be anonymous). A bad identity is 401/403. */
export async function optionalBuyer(deps: Pick<AppDeps, 'db' | 'authenticator'>, request: FastifyRequest, phoneToken: string | undefined): Promise<Buyer | null> {
  const token = bearer(request);
  if (token === null) throw unauthorized(authMessages.missing);
  if (token !== undefined) {
    const principal = await deps.authenticator.authenticate(token).catch(asPublicError);
    try {
      authorize(accessMatrix.hardwareSales, principal, request.method, request.url.split('?')[0]!);
    } catch (error) {
      asPublicError(error);
    }
    const userId = (principal as { userId: string }).userId;
    return { userId, phone: await accountPhone(deps.db, userId), via: principal.kind === 'oauth' ? 'oauth' : 'jwt' };
  }
  if (phoneToken === undefined) return null;
  const identity = await verifyPhoneToken(deps.db, phoneToken);
  if (!identity) throw unauthorized('Invalid or expired phone token');
  return { userId: identity.userId, phone: identity.phone, via: 'phone' };
}

/** The buyer of an order or a payment: anonymous callers are refused (401). */
export async function requireBuyer(deps: Pick<AppDeps, 'db' | 'authenticator'>, request: FastifyRequest, phoneToken: string | undefined): Promise<Buyer> {
  const buyer = await optionalBuyer(deps, request, phoneToken);
  if (!buyer) throw unauthorized('A login session, an OAuth token with orders:checkout, or a phoneToken is required');
  return buyer;
}
