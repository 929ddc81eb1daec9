// Clients of the 2025-11-25 era against `mrtr-wasm serve`: the TypeScript
// SDK 1.32.2 client (the most deployed MCP library) and the MCP Inspector
// 2.12.0 CLI and web UI in their default (legacy) era. Run by e2e/legacy.sh, which
// builds the server and sets MRTR_BIN.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const BIN = process.env.MRTR_BIN;
const ALICE = 'tok-alice-legacy-61b2f0';
const here = dirname(fileURLToPath(import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'mrtr-legacy-'));
let server, base, logs = '';

before(async () => {
  assert.ok(BIN, 'set MRTR_BIN to a built mrtr-wasm (e2e/legacy.sh does)');
  writeFileSync(join(work, 'tokens.json'), JSON.stringify({ [ALICE]: 'alice' }), { mode: 0o600 });
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

// A 2025-11-25 client whose user answers with `answer(params, n)`.
async function legacyClient(answer) {
  const client = new Client({ name: 'sdk-1.32.2-e2e', version: '1' }, { capabilities: { elicitation: { form: {} } } });
  let n = 0;
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params);
    return answer(req.params, ++n);
  });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${ALICE}` } },
  });
  await client.connect(transport);
  assert.ok(transport.sessionId, 'serve gave the legacy client a session (Mcp-Session-Id)');
  return { client, asked };
}

async function bookingCount(client) {
  const r = await client.callTool({ name: 'list_bookings', arguments: {} });
  return r.structuredContent.bookings.length;
}

function firstSlot(schema) {
  const opts = schema.properties.slot.oneOf;
  assert.ok(opts.length > 0 && opts[0].title, 'the slot form offers titled options');
  return opts[0].const;
}

test('SDK 1.32.2: decline, cancel, an invalid email then a valid one: one booking', async () => {
  const { client: probe } = await legacyClient(() => ({ action: 'cancel' }));
  const before = await bookingCount(probe);

  for (const action of ['decline', 'cancel']) {
    const { client } = await legacyClient(() => ({ action }));
    const r = await client.callTool({ name: 'book_demo_call', arguments: { topic: 'legacy e2e' } });
    assert.equal(r.structuredContent.booked, false, `${action} booked nothing`);
    assert.match(r.structuredContent.message, action === 'decline' ? /declined/ : /cancelled/);
    await client.close();
  }

  const { client, asked } = await legacyClient((params, n) => {
    if (n === 1) return { action: 'accept', content: { name: 'Ada Legacy', email: 'not an email' } };
    if (n === 2) return { action: 'accept', content: { name: 'Ada Legacy', email: 'ada@example.com' } };
    return { action: 'accept', content: { slot: firstSlot(params.requestedSchema), confirm: true } };
  });
  const r = await client.callTool({ name: 'book_demo_call', arguments: { topic: 'legacy e2e' } });
  assert.equal(r.structuredContent.booked, true, JSON.stringify(r));
  assert.equal(asked.length, 3, 'contact, contact again (naming the email), slot');
  assert.match(asked[1].message, /email/i, 'the re-ask names the wrong field');
  assert.equal(asked[1].requestedSchema.properties.name.default, 'Ada Legacy', 'the valid answer is kept as a default');
  assert.equal(await bookingCount(client), before + 1, 'exactly one booking');
  await client.close();
  await probe.close();
});

const inspector = join(here, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
const run = promisify(execFile);

test('Inspector 2.12.0 CLI, default era: lists the tools and calls list_bookings', async () => {
  const common = ['--cli', `${base}/mcp`, '--transport', 'http', '--header', `Authorization: Bearer ${ALICE}`];
  const list = await run(process.execPath, [inspector, ...common, '--method', 'tools/list'],
    { timeout: 60000, env: { ...process.env, HOME: work } });
  const tools = JSON.parse(list.stdout).tools.map((t) => t.name);
  assert.deepEqual(tools.sort(), ['book_demo_call', 'cancel_booking', 'connect_calendar', 'list_bookings']);
  const call = await run(process.execPath, [inspector, ...common, '--method', 'tools/call', '--tool-name', 'list_bookings'],
    { timeout: 60000, env: { ...process.env, HOME: work } });
  const res = JSON.parse(call.stdout);
  assert.ok(Array.isArray(res.structuredContent.bookings), call.stdout);
});

// The Inspector's web UI, in headless Chromium (Debian's, driven by
// playwright-core): it connects in its default era, runs book_demo_call,
// renders our forms itself; we fill and submit them as a person would, and
// the booking appears.
test('Inspector 2.12.0 web UI: the forms it renders book a call', async () => {
  const { chromium } = await import('playwright-core');
  const port = 20000 + Math.floor(Math.random() * 30000);
  let out = '';
  const web = spawn(process.execPath, [inspector, '--web', '--transport', 'http', '--server-url', `${base}/mcp`,
    '--header', `Authorization: Bearer ${ALICE}`], {
    env: { ...process.env, HOME: work, CLIENT_PORT: String(port), MCP_SANDBOX_PORT: String(port + 1), MCP_AUTO_OPEN_ENABLED: 'false' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  web.stdout.on('data', (d) => { out += d; });
  web.stderr.on('data', (d) => { out += d; });
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
  try {
    let url;
    for (let i = 0; i < 240 && !url; i++) {
      url = out.match(/http:\/\/127\.0\.0\.1:\d+\?MCP_INSPECTOR_API_TOKEN=[0-9a-f]+/)?.[0];
      if (!url) await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(url, 'the Inspector did not start:\n' + out);
    const { client } = await legacyClient(() => ({ action: 'cancel' }));
    const before = await bookingCount(client);

    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(url);
    await page.locator('[role=switch], input[type=checkbox]').first().click({ force: true });
    await page.getByText('Connected', { exact: true }).waitFor({ timeout: 60000 });
    await page.getByText('MCP 2025-11-25').waitFor();
    await page.getByText('Tools', { exact: true }).click();
    await page.getByText('book_demo_call').first().click();
    await page.getByRole('button', { name: 'Execute Tool' }).click();
    await page.getByRole('textbox', { name: 'Work email' }).fill('ada.web@example.com');
    await page.getByRole('textbox', { name: 'Your name' }).fill('Ada Inspector');
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.getByRole('textbox', { name: 'Time slot' }).click();
    await page.getByRole('option').first().click();
    await page.getByRole('checkbox', { name: 'Book this slot' }).check();
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.getByText(/Booked: a demo call for Ada Inspector/).first().waitFor({ timeout: 60000 });
    assert.equal(await bookingCount(client), before + 1, 'the booking appears in list_bookings');
    await client.close();
  } finally {
    await browser.close();
    web.kill('SIGTERM');
    await new Promise((r) => web.once('exit', r));
  }
});

// The same client through `mrtr-wasm proxy`, in front of a 2026-07-28
// upstream (this serve): the proxy gives it a session, answers serve's
// rounds on it, and asks a wrong email again itself.
test('SDK 1.32.2 through the proxy in front of a 2026-07-28 server: one booking', async () => {
  const port = 20000 + Math.floor(Math.random() * 30000);
  let plogs = '';
  const proxy = spawn(BIN, ['proxy', '--addr', `127.0.0.1:${port}`, '--auth-tokens', join(work, 'tokens.json'),
    '--upstream', `${base}/mcp`, '--upstream-header', `Authorization: Bearer ${ALICE}`, '--log-format', 'text'],
  { stdio: ['ignore', 'ignore', 'pipe'] });
  proxy.stderr.on('data', (d) => { plogs += d; });
  try {
    const pbase = `http://127.0.0.1:${port}`;
    let up = false;
    for (let i = 0; i < 600 && !up; i++) {
      try { up = (await fetch(`${pbase}/healthz`)).ok; } catch { /* not yet */ }
      if (!up) await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(up, 'the proxy did not start:\n' + plogs);
    const { client: direct } = await legacyClient(() => ({ action: 'cancel' }));
    const before = await bookingCount(direct);

    const client = new Client({ name: 'sdk-1.32.2-via-proxy', version: '1' }, { capabilities: { elicitation: { form: {} } } });
    const asked = [];
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params);
      if (asked.length === 1) return { action: 'accept', content: { name: 'Ada Proxy', email: 'not an email' } };
      if (asked.length === 2) return { action: 'accept', content: { name: 'Ada Proxy', email: 'ada.proxy@example.com' } };
      return { action: 'accept', content: { slot: firstSlot(req.params.requestedSchema), confirm: true } };
    });
    const transport = new StreamableHTTPClientTransport(new URL(`${pbase}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${ALICE}` } },
    });
    await client.connect(transport);
    assert.ok(transport.sessionId, 'the proxy gave the legacy client a session');
    const r = await client.callTool({ name: 'book_demo_call', arguments: { topic: 'via proxy' } });
    assert.equal(r.structuredContent?.booked, true, JSON.stringify(r));
    assert.equal(asked.length, 3, 'contact, contact again (asked by the proxy), slot');
    assert.match(asked[1].message, /email/i);
    assert.equal(await bookingCount(direct), before + 1, 'exactly one booking');
    await client.close();
    await direct.close();
  } finally {
    proxy.kill('SIGTERM');
    await new Promise((r) => proxy.once('exit', r));
  }
});
