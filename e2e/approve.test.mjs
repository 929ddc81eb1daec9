// Approvals (confirm) with real clients against `mrtr-wasm serve`: the
// shipped policy makes cancel_booking wait for the caller's yes. The TS SDK
// 2.4.0 client (MRTR, 2026-07-28) answers the guard's confirm form through
// its elicitation handler; the TS SDK 1.32.2 client (2025-11-25) gets the
// same form as elicitation/create on its session. A no cancels nothing and
// is an error result; a yes cancels the booking once. Run by e2e/legacy.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const BIN = process.env.MRTR_BIN;
const ALICE = 'tok-alice-approve-4b7e21';
const work = mkdtempSync(join(tmpdir(), 'mrtr-approve-'));
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

// answers: the contact and slot forms of book_demo_call, and the guard's
// confirm form with `approve`.
function answer(params, approve) {
  const props = params.requestedSchema.properties;
  if (props.approve) {
    assert.equal(props.approve.type, 'boolean', 'the confirm form is a yes/no');
    assert.match(params.message, /^Cancel the booking bk_[0-9a-f]+\. This cannot be undone\.$/, 'the form says what will happen');
    return { action: 'accept', content: { approve } };
  }
  if (props.slot) return { action: 'accept', content: { slot: props.slot.oneOf[0].const, confirm: true } };
  return { action: 'accept', content: { name: 'Ann Approve', email: 'ann@example.com' } };
}

async function modernClient() {
  const client = new Client({ name: 'mrtr-wasm-approve', version: '1.0.0' }, {
    versionNegotiation: { mode: { pin: '2026-07-28' } },
    capabilities: { elicitation: { form: {} } },
    inputRequired: { autoFulfill: true },
  });
  const state = { approve: false, confirms: 0 };
  client.setRequestHandler('elicitation/create', async (req) => {
    if (req.params.requestedSchema.properties.approve) state.confirms++;
    return answer(req.params, state.approve);
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${ALICE}` } },
  }));
  return { client, state };
}

async function legacyClient() {
  const client = new LegacyClient({ name: 'sdk-1.32.2-approve', version: '1' }, { capabilities: { elicitation: { form: {} } } });
  const state = { approve: false, confirms: 0 };
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    if (req.params.requestedSchema.properties.approve) state.confirms++;
    return answer(req.params, state.approve);
  });
  await client.connect(new LegacyTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${ALICE}` } },
  }));
  return { client, state };
}

async function bookingIDs(client) {
  const r = await client.callTool({ name: 'list_bookings', arguments: {} });
  return r.structuredContent.bookings.map((b) => b.id);
}

async function confirmRun(make) {
  const { client, state } = await make();
  const booked = await client.callTool({ name: 'book_demo_call', arguments: { topic: 'approve e2e' } });
  assert.equal(booked.structuredContent.booked, true, JSON.stringify(booked));
  const id = booked.structuredContent.booking.id;

  // No: an error result, nothing cancelled.
  const no = await client.callTool({ name: 'cancel_booking', arguments: { booking_id: id } });
  assert.equal(no.isError, true, JSON.stringify(no));
  assert.match(no.content[0].text, /Not approved/);
  assert.equal(state.confirms, 1, 'the client was asked to confirm once');
  assert.ok((await bookingIDs(client)).includes(id), 'a no cancels nothing');

  // Yes: cancelled, once.
  state.approve = true;
  const yes = await client.callTool({ name: 'cancel_booking', arguments: { booking_id: id } });
  assert.equal(yes.isError ?? false, false, JSON.stringify(yes));
  assert.equal(yes.structuredContent.cancelled, true, JSON.stringify(yes));
  assert.equal(yes.structuredContent.booking.id, id);
  assert.equal(state.confirms, 2);
  assert.ok(!(await bookingIDs(client)).includes(id), 'the booking is gone');
  await client.close();
}

test('TS SDK 2.4.0: the confirm form through its elicitation handler; no cancels nothing, yes cancels once', async () => {
  await confirmRun(modernClient);
});

test('TS SDK 1.32.2: the same confirm form as elicitation/create on its session', async () => {
  await confirmRun(legacyClient);
});
