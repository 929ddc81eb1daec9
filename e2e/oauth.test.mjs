// mrtr-wasm serve as an OAuth 2.1 protected resource of a real OpenID
// provider (zitadel's example OP, e2e/oidc-op), driven by the official
// TypeScript SDK client 2.4.0 and its own OAuth providers, and the connect
// page signing people in at the provider, in Debian's headless Chromium.
// Run by e2e/oauth.sh, which builds both binaries (MRTR_BIN, MRTR_OIDC_OP).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { createServer as createHTTPServer } from 'node:http';
import { mkdtempSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { Client, StreamableHTTPClientTransport, ClientCredentialsProvider, UnauthorizedError } from '@modelcontextprotocol/client';

const BIN = process.env.MRTR_BIN;
const OP_BIN = process.env.MRTR_OIDC_OP;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const KEY = 'cal-key-oauth-marker-9e4f';
const work = mkdtempSync(join(tmpdir(), 'mrtr-oauth-'));
let op, server, issuer, base, logs = '';
let browser;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
    s.on('error', reject);
  });
}

before(async () => {
  assert.ok(BIN && OP_BIN, 'set MRTR_BIN and MRTR_OIDC_OP (e2e/oauth.sh does)');
  op = spawn(OP_BIN, [], { stdio: ['ignore', 'pipe', 'ignore'] });
  issuer = await new Promise((resolve, reject) => {
    let out = '';
    op.stdout.on('data', (d) => { out += d; const m = /ISSUER (\S+)/.exec(out); if (m) resolve(m[1]); });
    op.once('exit', () => reject(new Error('the OpenID provider exited')));
  });
  writeFileSync(join(work, 'client-secret'), 'connect-secret-0123456789\n', { mode: 0o600 });
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  server = spawn(BIN, ['serve', '--addr', `127.0.0.1:${port}`, '--oauth-issuer', issuer, '--oauth-scopes', 'mcp',
    '--oauth-client-id', 'mrtr-connect', '--oauth-client-secret-file', join(work, 'client-secret'),
    '--data', join(work, 'data'), '--wasm-cache', process.env.MRTR_WASM_CACHE || join(work, 'cache')],
  { stdio: ['ignore', 'ignore', 'pipe'] });
  server.stderr.on('data', (d) => { logs += d; });
  for (let i = 0; i < 600; i++) {
    try { if ((await fetch(`${base}/healthz`)).ok) break; } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 500));
  }
  browser = await chromium.launch({
    executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  if (browser) await browser.close();
  for (const p of [server, op]) {
    if (p && p.exitCode === null) {
      p.kill('SIGTERM');
      await new Promise((r) => p.once('exit', r));
    }
  }
  rmSync(work, { recursive: true, force: true });
});

const newClient = () => new Client(
  { name: 'mrtr-wasm-oauth-e2e', version: '1.0.0' },
  {
    versionNegotiation: { mode: { pin: '2026-07-28' } },
    capabilities: { elicitation: { form: {}, url: {} } },
    inputRequired: { autoFulfill: false },
  },
);
const call = (client, name, params = {}) => client.callTool({ name, arguments: {}, ...params }, { allowInputRequired: true });

// book runs book_demo_call's two rounds.
async function book(client) {
  const r1 = await call(client, 'book_demo_call');
  assert.equal(r1.resultType, 'input_required', JSON.stringify(r1));
  const contact = { contact: { action: 'accept', content: { name: 'Ann Lee', email: 'ann@example.com' } } };
  const r2 = await call(client, 'book_demo_call', { requestState: r1.requestState, inputResponses: contact });
  assert.equal(r2.resultType, 'input_required', JSON.stringify(r2));
  const slot = r2.inputRequests.slot.params.requestedSchema.properties.slot.oneOf[0].const;
  const r3 = await call(client, 'book_demo_call', { requestState: r2.requestState, inputResponses: { slot: { action: 'accept', content: { slot, confirm: true } } } });
  assert.match(r3.content[0].text, /^Booked/, JSON.stringify(r3));
  return r1;
}

test('the SDK client\'s client-credentials provider gets a token and books; another subject cannot resume', async () => {
  // Without a token: 401 whose challenge leads to the metadata.
  const res = await fetch(`${base}/mcp`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  assert.equal(res.status, 401);
  const challenge = res.headers.get('www-authenticate');
  const m = /resource_metadata="([^"]+)"/.exec(challenge);
  assert.ok(m, challenge);
  assert.match(challenge, /scope="mcp"/);
  const meta = await (await fetch(m[1])).json();
  assert.equal(meta.resource, `${base}/mcp`);
  assert.deepEqual(meta.authorization_servers, [issuer]);

  const alice = newClient();
  await alice.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    authProvider: new ClientCredentialsProvider({ clientId: 'agent-alice', clientSecret: 'agent-secret-0123456789', expectedIssuer: issuer, scope: 'mcp' }),
  }));
  const r1 = await book(alice);
  const listed = await call(alice, 'list_bookings');
  assert.equal(listed.structuredContent.bookings.length, 1);

  const bob = newClient();
  await bob.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    authProvider: new ClientCredentialsProvider({ clientId: 'agent-bob', clientSecret: 'agent-secret-0123456789', expectedIssuer: issuer, scope: 'mcp' }),
  }));
  await assert.rejects(call(bob, 'book_demo_call', { requestState: r1.requestState, inputResponses: { contact: { action: 'accept', content: { name: 'B', email: 'b@example.com' } } } }),
    (e) => { assert.equal(e.code, -32602, e.message); return true; });
  assert.equal((await call(bob, 'list_bookings')).structuredContent.bookings.length, 0);
  await alice.close();
  await bob.close();
});

// signIn fills the provider's login page.
async function signIn(page, user, until) {
  await page.waitForSelector('#username');
  await page.fill('#username', user);
  await page.fill('#password', 'verysecure');
  await Promise.all([page.waitForURL(until), page.click('button[type=submit]')]);
}

// A person's MCP client: the SDK's authorization-code flow (PKCE), the
// sign-in done in the browser, the code caught at the redirect URI.
class BrowserAuth {
  constructor(user, redirect) {
    this.user = user;
    this.redirect = redirect;
  }
  get redirectUrl() { return this.redirect; }
  get clientMetadata() {
    return { client_name: 'e2e', redirect_uris: [this.redirect], grant_types: ['authorization_code'], token_endpoint_auth_method: 'client_secret_basic', scope: 'openid mcp' };
  }
  clientInformation() { return { client_id: 'mcp-app', client_secret: 'app-secret-0123456789', issuer }; }
  tokens() { return this._tokens; }
  saveTokens(t) { this._tokens = t; }
  saveCodeVerifier(v) { this._verifier = v; }
  codeVerifier() { return this._verifier; }
  saveDiscoveryState(s) { this._discovery = s; }
  discoveryState() { return this._discovery; }
  redirectToAuthorization(url) {
    // The SDK may not wait for this: person() does.
    this.done = (async () => {
      const ctx = await browser.newContext();
      const page = await ctx.newPage();
      await page.goto(url.toString());
      await signIn(page, this.user, (u) => u.href.startsWith(this.redirect));
      await ctx.close();
    })();
    return this.done;
  }
}

async function person(user) {
  // The redirect URI: a listener that keeps the code.
  let code, back;
  const cb = createHTTPServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    if (u.pathname === '/callback') {
      back = req.url;
      code = u.searchParams.get('code');
    }
    res.end('signed in');
  });
  await new Promise((r) => cb.listen(0, '127.0.0.1', r));
  const auth = new BrowserAuth(user, `http://127.0.0.1:${cb.address().port}/callback`);
  const url = new URL(`${base}/mcp`);
  const transport = new StreamableHTTPClientTransport(url, { authProvider: auth });
  const client = newClient();
  await assert.rejects(client.connect(transport), UnauthorizedError);
  await auth.done;
  cb.close();
  assert.ok(code, `no authorization code came back: ${back}`);
  await transport.finishAuth(code);
  const c = newClient();
  await c.connect(new StreamableHTTPClientTransport(url, { authProvider: auth }));
  return c;
}

test('the connect page signs people in: the wrong person is refused, the right one stores the key', async () => {
  const user = `test-user@${new URL(issuer).hostname}`;
  const ann = await person(user);
  await book(ann); // an authorization-code token reaches the tools too

  const first = await call(ann, 'connect_calendar');
  assert.equal(first.resultType, 'input_required');
  const link = first.inputRequests.calendar.params.url;
  assert.ok(link.startsWith(`${base}/connect/`), link);
  const consent = { calendar: { action: 'accept' } };

  // Someone else opens Ann's link and signs in as themselves: refused.
  let ctx = await browser.newContext();
  let page = await ctx.newPage();
  await page.goto(link);
  assert.equal(new URL(page.url()).origin, new URL(issuer).origin, 'the page should send the browser to sign in');
  await signIn(page, 'test-user2', (u) => u.href === link);
  await page.waitForSelector('#result');
  assert.match(await page.textContent('#result'), /another account/);
  assert.equal(await page.$('#api_key'), null);
  assert.equal(await page.$('#token'), null);
  await ctx.close();

  let retry = await call(ann, 'connect_calendar', { requestState: first.requestState, inputResponses: consent });
  assert.equal(retry.resultType, 'input_required', 'nothing may have been stored');

  // Ann signs in: the form, then stored.
  ctx = await browser.newContext();
  page = await ctx.newPage();
  await page.goto(link);
  await signIn(page, user, (u) => u.href === link);
  await page.waitForSelector('#api_key');
  const cookies = await ctx.cookies(base);
  for (const c of cookies) {
    assert.ok(c.httpOnly, `${c.name} is not HttpOnly`);
    assert.equal(c.sameSite, 'Lax', c.name);
    assert.ok(c.expires > 0 && c.expires < Date.now() / 1000 + 3600, `${c.name} is not short-lived`);
  }
  assert.equal(await page.$('#token'), null, 'the page must never ask for a bearer token');
  await page.fill('#api_key', KEY);
  const [resp] = await Promise.all([page.waitForNavigation(), page.click('#submit')]);
  assert.equal(resp.status(), 200);
  assert.match(await page.textContent('#result'), /connected/);
  mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
  await page.screenshot({ path: join(import.meta.dirname, 'results', 'connect-oauth-done.png') });
  await ctx.close();

  retry = await call(ann, 'connect_calendar', { requestState: retry.requestState, inputResponses: consent });
  assert.ok(!retry.inputRequests && retry.resultType !== 'input_required', JSON.stringify(retry));
  assert.match(retry.content[0].text, /calendar is connected/);
  assert.ok(!JSON.stringify(retry).includes(KEY));
  await ann.close();

  assert.ok(!logs.includes(KEY), 'the calendar key reached a log line');
  assert.ok(!/eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}/.test(logs), 'a JWT reached a log line');
  assert.match(logs, /"outcome":"wrong_principal"/);
  assert.match(logs, /"outcome":"connected"/);
});
