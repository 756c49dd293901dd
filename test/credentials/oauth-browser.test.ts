import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { challengeOf, newApp, newUser, newVerifier, tokenRequest } from './oauth-helpers.js';

const CHROMIUM = '/usr/bin/chromium';

/** The consent page in a real browser: sign in through the form, read the page, click Approve, land on the redirect URI. */
describe('OAuth consent page in Chromium', () => {
  let stack: TestStack;
  let browser: Browser;
  let base: string;
  let callbackServer: Server;
  let redirectUri: string;
  const callbacks: URL[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`Chromium is required at ${CHROMIUM} for the consent-page browser test. npm test installs it (scripts/ensure-test-dependencies.ts) when it runs as root or with passwordless sudo; otherwise run: sudo apt-get update && sudo apt-get install -y chromium`);
    }
    stack = await createTestStack();
    base = await stack.app.listen({ port: 0, host: '127.0.0.1' });
    // The client's redirect target: a tiny server that records what the browser brought back.
    callbackServer = createServer((req, res) => {
      const url = new URL(req.url!, redirectUri);
      if (url.pathname === '/callback') callbacks.push(url); // not the browser's /favicon.ico
      res.writeHead(200, { 'content-type': 'text/html' }).end('<p id="done">back at the app</p>');
    });
    await new Promise<void>((resolve) => callbackServer.listen(0, '127.0.0.1', resolve));
    redirectUri = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/callback`;
    browser = await chromium.launch({
      executablePath: CHROMIUM, headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => callbackServer?.close(resolve));
    await stack?.close();
  });

  it('signs in with the form, shows the app and scopes, Approve lands on the redirect URI with code and state, and the code exchanges', async () => {
    const user = await newUser(stack.db, 'Grace');
    const app = await newApp(stack, { name: 'Browser App', redirectUri });
    const verifier = newVerifier();
    const url = `${base}/oauth/authorize?${new URLSearchParams({
      response_type: 'code', client_id: app.clientId, redirect_uri: redirectUri, scope: 'profile:read orders:checkout',
      state: 'browser-state', code_challenge: challengeOf(verifier), code_challenge_method: 'S256',
    })}`;

    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(5000);
      await page.goto(url);
      expect(await page.textContent('#app-name')).toBe('Browser App');
      await page.fill('#id_token', await stack.deps.idp.issue(user.id, 600));
      await Promise.all([page.waitForURL((u) => u.pathname === '/oauth/authorize'), page.click('#sign-in')]);

      // The consent page, now signed in through the wf_session cookie.
      expect(await page.textContent('#app-name')).toBe('Browser App');
      expect(await page.textContent('#user-email')).toBe(user.email);
      const scopes = await page.$$eval('#scopes li', (items) => items.map((li) => li.getAttribute('data-scope')));
      expect(scopes).toEqual(['profile:read', 'orders:checkout']);
      const cookies = await context.cookies(base);
      expect(cookies.find((c) => c.name === 'wf_session')).toMatchObject({ httpOnly: true, sameSite: 'Lax' });

      await Promise.all([page.waitForURL((u) => u.pathname === '/callback'), page.click('#approve')]);
      expect(await page.textContent('#done')).toBe('back at the app');
      const landed = callbacks.at(-1)!;
      expect(landed.searchParams.get('state')).toBe('browser-state');
      const code = landed.searchParams.get('code')!;
      expect(code).toBeTruthy();

      const res = await tokenRequest(stack, { grant_type: 'authorization_code', client_id: app.clientId, code, redirect_uri: redirectUri, code_verifier: verifier });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'profile:read orders:checkout' });
    } finally {
      await context.close();
    }
  });

  it('Deny in the browser lands on the redirect URI with error=access_denied', async () => {
    const user = await newUser(stack.db);
    const app = await newApp(stack, { name: 'Denied App', redirectUri });
    const context = await browser.newContext();
    try {
      await context.addCookies([{ name: 'wf_session', value: await stack.deps.idp.issue(user.id, 600), url: base, httpOnly: true, sameSite: 'Lax' }]);
      const page = await context.newPage();
      await page.goto(`${base}/oauth/authorize?${new URLSearchParams({
        response_type: 'code', client_id: app.clientId, redirect_uri: redirectUri, scope: 'profile:read', state: 'deny-state',
        code_challenge: challengeOf(newVerifier()), code_challenge_method: 'S256',
      })}`);
      expect(await page.textContent('#app-name')).toBe('Denied App');
      await Promise.all([page.waitForURL((u) => u.pathname === '/callback'), page.click('#deny')]);
      const landed = callbacks.at(-1)!;
      expect(landed.searchParams.get('error')).toBe('access_denied');
      expect(landed.searchParams.get('state')).toBe('deny-state');
      expect(landed.searchParams.get('code')).toBeNull();
    } finally {
      await context.close();
    }
  });
});
