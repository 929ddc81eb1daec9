// The /connect page in a real browser: Debian's Chromium, headless, driven
// by playwright-core (which downloads no browser). Run by e2e/browser.sh,
// which builds the server and sets MRTR_BIN.
//
// The page must: take the calendar API key for the principal who started
// connect_calendar; refuse someone else (the anti-phishing rule) and an
// edited URL; store nothing on refusal; and never let the key reach the
// MCP client or a log line.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const BIN = process.env.MRTR_BIN;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ALICE = 'tok-alice-browser-7f3a9c';
const BOB = 'tok-bob-browser-2d8e4b1';
const KEY = 'cal-key-browser-marker-5c7d';
const work = mkdtempSync(join(tmpdir(), 'mrtr-connect-'));
let server, base, logs = '';

before(async () => {
  assert.ok(BIN, 'set MRTR_BIN to a built mrtr-wasm (e2e/browser.sh does)');
  writeFileSync(join(work, 'tokens.json'), JSON.stringify({ [ALICE]: 'alice', [BOB]: 'bob' }), { mode: 0o600 });
  const port = 20000 + Math.floor(Math.random() * 30000);
  base = `http://127.0.0.1:${port}`;
  server = spawn(BIN, ['serve', '--addr', `127.0.0.1:${port}`, '--auth-tokens', join(work, 'tokens.json'),
    '--data', join(work, 'data'), '--wasm-cache', process.env.MRTR_WASM_CACHE || join(work, 'cache')],
  { stdio: ['ignore', 'ignore', 'pipe'] });
  server.stderr.on('data', (d) => { logs += d; });
  for (let i = 0; i < 600; i++) {
    try { if ((await fetch(`${base}/healthz`)).ok) return; } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error('the server did not start:\n' + logs);
});

after(async () => {
  if (server) {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
  }
  rmSync(work, { recursive: true, force: true });
});

let rpcID = 0;
async function callTool(token, params) {
  const body = {
    jsonrpc: '2.0', id: ++rpcID, method: 'tools/call',
    params: {
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } },
      },
      name: 'connect_calendar', arguments: {}, ...params,
    },
  };
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'connect_calendar',
      Authorization: `Bearer ${token}`,
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  assert.ok(!text.includes(KEY), 'the calendar key reached the MCP client');
  return JSON.parse(text);
}

test('the connect page takes the key only from the principal who asked', async () => {
  const first = await callTool(ALICE, {});
  assert.equal(first.result.resultType, 'input_required');
  const ask = first.result.inputRequests.calendar;
  assert.equal(ask.method, 'elicitation/create');
  assert.equal(ask.params.mode, 'url');
  assert.ok(ask.params.url.startsWith(`${base}/connect/`), ask.params.url);
  const url = ask.params.url;
  const consent = { calendar: { action: 'accept' } };

  const profile = join(work, 'profile');
  mkdirSync(profile);
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await ctx.newPage();

    // Bob got Alice's link (phishing): refused, nothing stored.
    let resp = await page.goto(url);
    assert.equal(resp.status(), 200);
    await page.fill('#token', BOB);
    await page.fill('#api_key', KEY);
    [resp] = await Promise.all([page.waitForNavigation(), page.click('#submit')]);
    assert.equal(resp.status(), 403);
    assert.match(await page.textContent('#result'), /another account/);

    // Not submitted by Alice yet: the retry asks again, URL mode.
    let retry = await callTool(ALICE, { requestState: first.result.requestState, inputResponses: consent });
    assert.equal(retry.result.resultType, 'input_required');
    assert.equal(retry.result.inputRequests.calendar.params.mode, 'url');

    // An edited URL names no session: nothing to submit.
    const edited = url.slice(0, -4) + (url.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    resp = await page.goto(edited);
    assert.equal(resp.status(), 404);
    assert.equal(await page.$('#api_key'), null);

    // A wrong token: refused.
    await page.goto(url);
    await page.fill('#token', 'not-a-valid-token-at-all');
    await page.fill('#api_key', KEY);
    [resp] = await Promise.all([page.waitForNavigation(), page.click('#submit')]);
    assert.equal(resp.status(), 401);

    // Alice: stored.
    await page.goto(url);
    await page.fill('#token', ALICE);
    await page.fill('#api_key', KEY);
    [resp] = await Promise.all([page.waitForNavigation(), page.click('#submit')]);
    assert.equal(resp.status(), 200);
    assert.match(await page.textContent('#result'), /connected/);
    mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
    await page.screenshot({ path: join(import.meta.dirname, 'results', 'connect-done.png') });

    // Single use.
    resp = await page.goto(url);
    assert.equal(resp.status(), 410);

    // The retry after accept now completes.
    retry = await callTool(ALICE, { requestState: retry.result.requestState, inputResponses: consent });
    assert.equal(retry.result.resultType, 'complete', JSON.stringify(retry));
    assert.match(retry.result.content[0].text, /connected/);
  } finally {
    await ctx.close();
  }

  for (const secret of [KEY, ALICE, BOB]) {
    assert.ok(!logs.includes(secret), `a log line contains ${secret}`);
  }
  assert.match(logs, /"outcome":"wrong_principal"/);
  assert.match(logs, /"outcome":"connected"/);
});
