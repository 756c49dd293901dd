import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPrice } from '../../shared/billing/price-list.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { billingFixtures, type BillingFixtures } from './fixtures.js';

const CHROMIUM = '/usr/bin/chromium';

/** A mock checkout paid in a real browser: open its payUrl on the listening service, click a button, land on return_url. */
describe('mock payment page in Chromium', () => {
  let stack: TestStack;
  let fx: BillingFixtures;
  let browser: Browser;
  let base: string;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`Chromium is required at ${CHROMIUM} for the mock payment browser test. npm test installs it (scripts/ensure-test-dependencies.ts) when it runs as root or with passwordless sudo; otherwise run: sudo apt-get update && sudo apt-get install -y chromium`);
    }
    stack = await createTestStack();
    fx = billingFixtures(stack);
    base = await stack.app.listen({ port: 0, host: '127.0.0.1' });
    browser = await chromium.launch({
      executablePath: CHROMIUM, headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  /** A member's mock checkout through the API, as a client makes it. */
  async function mockCheckout(credits: number) {
    const { teamId, userId } = await fx.team();
    const { id: priceId } = await createPrice(stack.db, { productCode: `pack-${randomUUID().slice(0, 8)}`, name: `${credits} credits`, amount: 1_990, credits });
    const res = await fetch(`${base}/billing/checkout`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await stack.deps.idp.issue(userId, 600)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ teamId, priceId, provider: 'mock' }),
    });
    expect(res.status).toBe(201);
    return { teamId, ...(await res.json() as { orderId: string; payUrl: string }) };
  }

  /** Opens the page (returning to /healthz) and clicks `button`; resolves once the browser has landed back. */
  async function clickThrough(payUrl: string, button: '#pay-success' | '#pay-failed', check: (page: Page) => Promise<void>) {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(5000);
      await page.goto(`${base}${payUrl}&return_url=${encodeURIComponent('/healthz')}`);
      await check(page);
      await Promise.all([page.waitForURL((u) => u.pathname === '/healthz'), page.click(button)]);
    } finally {
      await context.close();
    }
  }

  it('Pay marks the order paid and credits the team, then lands on return_url', async () => {
    const order = await mockCheckout(25);
    await clickThrough(order.payUrl, '#pay-success', async (page) => {
      expect(await page.textContent('#amount')).toBe('1990');
      expect(await page.textContent('#currency')).toBe('CNY');
    });
    expect(await fx.orderRow(order.orderId)).toMatchObject({ status: 'paid', paid_at: expect.any(Date) });
    expect(await fx.balance(order.teamId)).toBe(25_000);
    expect(await fx.creditRows(order.teamId)).toEqual([{ amount_milli: 25_000, reason: 'payment', reference: `billing-order:${order.orderId}` }]);
  });

  it('Fail marks the order failed and credits nothing', async () => {
    const order = await mockCheckout(5);
    await clickThrough(order.payUrl, '#pay-failed', async () => {});
    expect(await fx.orderRow(order.orderId)).toMatchObject({ status: 'failed', paid_at: null });
    expect(await fx.balance(order.teamId)).toBe(0);
  });

  it('a page whose amount was edited is refused by the callback: the page says why and stays, the order stays pending', async () => {
    const order = await mockCheckout(5);
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(5000);
      await page.goto(`${base}${order.payUrl.replace('amount=1990', 'amount=1')}`);
      await page.click('#pay-success');
      await page.locator('#result', { hasText: /\S/ }).waitFor();
      expect(await page.textContent('#result')).toBe('The amount is not the order\'s (1990 CNY)');
      expect(new URL(page.url()).pathname).toBe('/mock-payment/pay');
    } finally {
      await context.close();
    }
    expect(await fx.orderRow(order.orderId)).toMatchObject({ status: 'pending' });
    expect(await fx.balance(order.teamId)).toBe(0);
  });
});
