// End to end: the official MCP client (@modelcontextprotocol/client 2.4.0)
// over HTTP on a random loopback port, against the example server built on
// @modelcontextprotocol/server 2.4.0 and guarded by mrtr-wasm.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createGuard, generateKey, redisLedger, MemoryLedger } from 'mrtr-wasm';
import { start, memoryCRM } from './server.mjs';
import { redisOrSkip } from '../../test/helpers.mjs';

const { redis, skip } = await redisOrSkip();
const prefix = `mrtr-sdkjs-e2e:${randomBytes(6).toString('hex')}:`;
const keys = generateKey();
const logs = [];
const servers = [];
after(async () => {
  for (const s of servers) await s.close();
  if (!redis) return;
  const k = await redis.keys(`${prefix}*`);
  if (k.length) await redis.del(k);
  await redis.quit();
});

async function server(ledger, crm = memoryCRM()) {
  const guard = await createGuard({ keys, audience: 'book-demo.example', ledger });
  const s = await start({ guard, crm, tokens: { 'tok-ann': 'ann', 'tok-bob': 'bob' }, log: (o) => logs.push(o) });
  servers.push(s);
  return s;
}

async function connect(url, { token = 'tok-ann', auto = false, onElicit } = {}) {
  const client = new Client(
    { name: 'mrtr-wasm-e2e', version: '1.0.0' },
    {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      capabilities: { elicitation: { form: {} } },
      inputRequired: { autoFulfill: auto },
    },
  );
  if (onElicit) client.setRequestHandler('elicitation/create', onElicit);
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return client;
}

const call = (client, params) => client.callTool({ name: 'book_demo_call', arguments: { topic: 'pricing' }, ...params }, { allowInputRequired: true });
const textOf = (r) => r.content.map((c) => c.text).join('\n');
const ann = { action: 'accept', content: { name: 'Ann Lee', email: 'ann@example.com' } };

for (const [name, ledger, skipIt] of [
  ['memory ledger', () => new MemoryLedger(), false],
  ['redis ledger', () => redisLedger(redis, { prefix }), skip],
]) {
  test(`four answers, then the final retry replayed, 20 times at once (${name}): exactly one booking`, { skip: skipIt }, async () => {
    const s = await server(ledger());
    const client = await connect(s.url);
    const first = await call(client, {});
    assert.equal(first.resultType, 'input_required');
    const form = first.inputRequests.contact;
    assert.equal(form.method, 'elicitation/create');
    assert.deepEqual(form.params.requestedSchema.required, ['name', 'email']);
    assert.equal(form.params.requestedSchema.properties.email.format, 'email');
    const state = first.requestState;

    // 1. A valid accept: one booking.
    const retry = { requestState: state, inputResponses: { contact: ann } };
    const booked = await call(client, retry);
    assert.ok(!booked.isError);
    assert.match(textOf(booked), /^Booked demo call b-1 for Ann Lee <ann@example.com> about pricing\.$/);
    // 2. Accept without the email: a new form that names the field.
    const noEmail = await call(client, { requestState: state, inputResponses: { contact: { action: 'accept', content: { name: 'Ann Lee' } } } });
    assert.equal(noEmail.resultType, 'input_required');
    assert.match(noEmail.inputRequests.contact.params.message, /email/);
    assert.equal(noEmail.inputRequests.contact.params.requestedSchema.properties.name.default, 'Ann Lee');
    const badEmail = await call(client, { requestState: state, inputResponses: { contact: { action: 'accept', content: { name: 'Ann Lee', email: 'ann-at-example' } } } });
    assert.equal(badEmail.resultType, 'input_required');
    assert.match(badEmail.inputRequests.contact.params.message, /email/);
    // 3. Decline: a normal result, nothing booked.
    const declined = await call(client, { requestState: state, inputResponses: { contact: { action: 'decline' } } });
    assert.ok(!declined.isError);
    assert.match(textOf(declined), /Nothing was booked/);
    // 4. Cancel: nothing booked, the request can be made again.
    const cancelled = await call(client, { requestState: state, inputResponses: { contact: { action: 'cancel' } } });
    assert.ok(!cancelled.isError);
    assert.match(textOf(cancelled), /again/);
    assert.equal(s.crm.bookings.length, 1, 'exactly one booking, from the valid accept');
    assert.equal(s.crm.bookings[0].email, 'ann@example.com');
    assert.equal(s.crm.bookings[0].principal, 'ann');

    // The same final retry, replayed: the same booking, never a second.
    const replay = await call(client, retry);
    assert.equal(textOf(replay), textOf(booked));
    assert.equal(replay._meta?.['mrtr-wasm/replay'], true);
    const many = await Promise.all(Array.from({ length: 20 }, () => call(client, retry)));
    for (const r of many) assert.equal(textOf(r), textOf(booked));
    assert.equal(s.crm.bookings.length, 1);

    // Tampered, cross-principal and changed-arguments retries: -32602, nothing written.
    const t = state.slice(0, 40) + (state[40] === 'A' ? 'B' : 'A') + state.slice(41);
    const bob = await connect(s.url, { token: 'tok-bob' });
    for (const [c, params] of [
      [client, { ...retry, requestState: t }],
      [bob, retry],
      [client, { ...retry, arguments: { topic: 'refunds' } }],
    ]) {
      await assert.rejects(call(c, params), (e) => {
        assert.equal(e.code, -32602, e.message);
        assert.match(e.message, /invalid or expired requestState/);
        return true;
      });
    }
    assert.equal(s.crm.bookings.length, 1);
    assert.deepEqual(logs.slice(-3).map((l) => l.reason), ['tampered', 'principal', 'arguments']);
    await client.close();
    await bob.close();
  });
}

test('two servers, one Redis ledger: a request asked on one completes on the other, once', { skip }, async () => {
  const crm = memoryCRM();
  const a = await server(redisLedger(redis, { prefix }), crm);
  const b = await server(redisLedger(redis, { prefix }), crm);
  const ca = await connect(a.url);
  const cb = await connect(b.url);
  const first = await call(ca, {});
  const retry = { requestState: first.requestState, inputResponses: { contact: ann } };
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => call(i % 2 ? ca : cb, retry)));
  assert.equal(crm.bookings.length, 1);
  assert.ok(results.every((r) => textOf(r) === textOf(results[0])));
  await ca.close();
  await cb.close();
});

test('the SDK client fulfils the form itself: a wrong email, then a right one', async () => {
  const s = await server(new MemoryLedger());
  const asked = [];
  const client = await connect(s.url, {
    auto: true,
    onElicit: async (req) => {
      asked.push(req.params.message);
      return asked.length === 1 ? { action: 'accept', content: { name: 'Bo', email: 'bo@' } } : { action: 'accept', content: { name: 'Bo', email: 'bo@example.com' } };
    },
  });
  const r = await client.callTool({ name: 'book_demo_call', arguments: { topic: 'security' } });
  assert.match(textOf(r), /^Booked demo call b-1 for Bo <bo@example.com> about security\.$/);
  assert.equal(asked.length, 2);
  assert.match(asked[1], /email/);
  assert.equal(s.crm.bookings.length, 1);
  await client.close();
});

test('a client without the elicitation capability gets -32021', async () => {
  const s = await server(new MemoryLedger());
  const client = new Client({ name: 'no-elicitation', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(s.url, { requestInit: { headers: { Authorization: 'Bearer tok-ann' } } }));
  await assert.rejects(client.callTool({ name: 'book_demo_call', arguments: {} }), (e) => e.code === -32021);
  const res = await fetch(s.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  assert.equal(res.status, 401, 'no bearer token, no service');
  await client.close();
});
