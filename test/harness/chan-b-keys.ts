import { generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';

/**
 * chan_b (Alipay open platform, RSA2) as the tests play it: our app key pair (the service signs pay
 * URLs with its private half; the tests verify with the public half, as the channel would) and the
 * channel's key pair (the tests sign notifications with its private half; the service holds only the
 * public half). The signing here is written independently of shared/payment-channels/chan-b, so a
 * mistake there fails against it.
 */
export interface ChanBKeys {
  appId: string;
  appPublicKey: KeyObject;
  channelPrivateKey: KeyObject;
  /** CHAN_B_* for createTestStack (the gateway is never called: pay URLs are opened by browsers). */
  env: Record<string, string>;
  /** A notification form body signed as the channel signs it; `tamper` forges it afterwards. */
  notification(params: Record<string, string>, tamper?: ChanBNotificationTamper): string;
}

export interface ChanBNotificationTamper {
  /** Flip one bit of the decoded signature. */
  flipSignatureBit?: boolean;
  /** Parameters changed after signing. */
  changeAfterSigning?: Record<string, string>;
  /** Leave `sign` out. */
  unsigned?: boolean;
}

const pem = (key: KeyObject, kind: 'private' | 'public') =>
  kind === 'private' ? key.export({ type: 'pkcs8', format: 'pem' }).toString() : key.export({ type: 'spki', format: 'pem' }).toString();

export function chanBKeys(appId = '2021000000000001'): ChanBKeys {
  const app = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const channel = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    appId,
    appPublicKey: app.publicKey,
    channelPrivateKey: channel.privateKey,
    env: {
      CHAN_B_APP_ID: appId,
      // One line with `\n` escapes, as env files carry PEMs.
      CHAN_B_APP_PRIVATE_KEY: pem(app.privateKey, 'private').replace(/\n/g, '\\n'),
      CHAN_B_PUBLIC_KEY: pem(channel.publicKey, 'public'),
      CHAN_B_GATEWAY_URL: 'https://openapi.alipay.example/gateway.do',
    },
    notification(params, tamper = {}) {
      const all: Record<string, string> = { charset: 'utf-8', version: '1.0', sign_type: 'RSA2', ...params };
      const content = Object.entries(all)
        .filter(([key, value]) => key !== 'sign' && key !== 'sign_type' && value !== '')
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([key, value]) => `${key}=${value}`).join('&');
      const signature = sign('sha256', Buffer.from(content, 'utf8'), channel.privateKey);
      if (tamper.flipSignatureBit) signature[signature.length >> 1]! ^= 0x01;
      const sent: Record<string, string> = { ...all, ...tamper.changeAfterSigning };
      if (!tamper.unsigned) sent.sign = signature.toString('base64');
      return new URLSearchParams(sent).toString();
    },
  };
}

/** The parameters of a chan_b `TRADE_SUCCESS` notification (override any). */
export function chanBPaidParams(keys: Pick<ChanBKeys, 'appId'>, overrides: Record<string, string> & { out_trade_no: string; total_amount: string }): Record<string, string> {
  return {
    notify_time: '2025-06-01 12:00:05', notify_type: 'trade_status_sync', notify_id: randomUUID().replace(/-/g, ''),
    app_id: keys.appId, trade_no: `2025060122001${String(Date.now()).slice(-9)}`, buyer_logon_id: '159****1234',
    seller_id: '2088000000000000', trade_status: 'TRADE_SUCCESS', receipt_amount: overrides.total_amount,
    subject: 'Desk Robot', gmt_create: '2025-06-01 11:59:40', gmt_payment: '2025-06-01 12:00:00', ...overrides,
  };
}
