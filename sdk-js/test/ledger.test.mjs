// Exactly once: the memory ledger and the Redis ledger (against the real
// server at 127.0.0.1:6379, or MRTR_TEST_REDIS; skipped without one unless
// MRTR_REQUIRE_SERVICES=1) pass one contract, once() runs an effect at
// most once per logical request, and the Redis layout is the Go ledger's.
// Leases and TTLs run on a fake clock for the memory ledger and are
// polled for Redis (its clock is the server's): no sleeps with slack.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import {
  createGuard, form, generateKey, GuardError, codes, MemoryLedger, RedisLedger, redisLedger, ClaimStatus,
  LedgerLostError, fingerprint, rawJSON,
} from '../index.js';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { baseRequest, contactSchema, runGo, goRaw, connectRedis, redisOrSkip, awaitState, REDIS_URL, canonicalJSON, vectorsDir } from './helpers.mjs';
import { seams } from '../src/seams.js';

const prefix = `mrtr-sdkjs-test:${randomBytes(6).toString('hex')}:`;
const { redis, skip } = await redisOrSkip();
after(async () => {
  if (!redis) return;
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length) await redis.del(keys);
  await redis.quit();
});

const fpA = 'a'.repeat(64);
const fpB = 'b'.repeat(64);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let n = 0;
const opId = () => `op${++n}-${randomBytes(4).toString('hex')}`;

// A fake clock for the memory ledger: expire(l, op, ms) moves it past a
// lease or TTL of ms, exactly.
function fakeClock() {
  let now = 1_000_000;
  return {
    make: () => new MemoryLedger({ [seams]: { clock: () => now } }),
    expire: async (l, op, ms) => {
      now += ms;
      assert.equal((await l.get(op)).state, 'absent');
    },
  };
}
const polled = (l, op) => awaitState(l, op, 'absent');

function contract(name, make, expire, skipIt = false) {
  test(`${name}: claim, finish, replay, conflict, release, lease expiry`, { skip: skipIt }, async () => {
    const l = make();
    const op = opId();
    const c1 = await l.claim(op, fpA, 10_000);
    assert.equal(c1.status, ClaimStatus.ACQUIRED);
    assert.equal(c1.token.length, 32);
    assert.equal((await l.claim(op, fpA, 10_000)).status, ClaimStatus.IN_PROGRESS);
    assert.equal((await l.claim(op, fpB, 10_000)).status, ClaimStatus.CONFLICT);
    assert.deepEqual(await l.get(op), { state: 'pending', fingerprint: fpA });
    await l.finish(op, c1.token, fpA, '{"booking":"b-1"}', 60_000);
    assert.deepEqual(await l.claim(op, fpA, 10_000), { status: ClaimStatus.FINISHED, result: '{"booking":"b-1"}' });
    assert.equal((await l.claim(op, fpB, 10_000)).status, ClaimStatus.CONFLICT);
    assert.deepEqual(await l.get(op), { state: 'done', fingerprint: fpA, result: '{"booking":"b-1"}' });
    // A retried finish by the owner succeeds; a stranger's is lost.
    await l.finish(op, c1.token, fpA, '{"booking":"b-1"}', 60_000);
    await assert.rejects(l.finish(op, 'f'.repeat(32), fpA, '{}', 60_000), LedgerLostError);
    // Release frees a pending claim only for its owner.
    const op2 = opId();
    const c2 = await l.claim(op2, fpA, 10_000);
    await l.release(op2, 'f'.repeat(32));
    assert.equal((await l.get(op2)).state, 'pending');
    await l.release(op2, c2.token);
    assert.equal((await l.get(op2)).state, 'absent');
    assert.equal((await l.claim(op2, fpB, 10_000)).status, ClaimStatus.ACQUIRED);
    // A claim whose owner died expires with its lease.
    const op3 = opId();
    const dead = await l.claim(op3, fpA, 50);
    await expire(l, op3, 50);
    const c3 = await l.claim(op3, fpA, 10_000);
    assert.equal(c3.status, ClaimStatus.ACQUIRED);
    await assert.rejects(l.finish(op3, dead.token, fpA, '{}', 60_000), LedgerLostError);
    // Finished entries expire after their ttl.
    await l.finish(op3, c3.token, fpA, '1', 50);
    assert.equal((await l.get(op3)).state, 'done');
    await expire(l, op3, 50);
    await assert.rejects(l.claim('', fpA, 10), /bad operation id/);
  });
}

{
  const clock = fakeClock();
  contract('memory ledger', clock.make, clock.expire);
}
contract('redis ledger (node-redis client)', () => redisLedger(redis, { prefix }), polled, skip);
contract('redis ledger (a plain command function)', () => new RedisLedger((args) => redis.sendCommand(args), { prefix }), polled, skip);

test('memory ledger: bounded, refuses new claims when full', async () => {
  const l = new MemoryLedger({ maxEntries: 2 });
  await l.claim('a', fpA, 10_000);
  await l.claim('b', fpA, 10_000);
  await assert.rejects(l.claim('c', fpA, 10_000), /full/);
  let now = 0;
  const short = new MemoryLedger({ maxEntries: 1, [seams]: { clock: () => now } });
  await short.claim('x', fpA, 20);
  now += 19;
  await assert.rejects(short.claim('y', fpA, 10_000), /full/);
  now += 1;
  assert.equal((await short.claim('y', fpA, 10_000)).status, ClaimStatus.ACQUIRED, 'expired entries make room');
  assert.equal(short.size, 1);
});

test('memory ledger: a byte budget refuses new claims, never forgets a live one', async () => {
  let now = 0;
  const l = new MemoryLedger({ maxBytes: 10_000, [seams]: { clock: () => now } });
  const big = 'é'.repeat(2000); // 4000 bytes of UTF-8
  const pending = await l.claim('pending', fpA, 3_600_000);
  for (const op of ['a', 'b', 'c']) {
    const c = await l.claim(op, fpA, 60_000);
    assert.equal(c.status, ClaimStatus.ACQUIRED, op);
    await l.finish(op, c.token, fpA, big, 200);
  }
  assert.ok(l.bytes > 12_000, `${l.bytes} bytes after three 4000-byte results`);
  await assert.rejects(l.claim('d', fpA, 60_000), /ledger: full: the byte budget/);
  assert.deepEqual(await l.get('c'), { state: 'done', fingerprint: fpA, result: big }, 'recorded over the budget');
  now += 200;
  assert.equal((await l.claim('d', fpA, 60_000)).status, ClaimStatus.ACQUIRED, 'expired entries make room');
  assert.equal((await l.get('pending')).state, 'pending', 'the live claim stays');
  await l.release('pending', pending.token);
  now += 60_000;
  assert.equal(l.size, 0);
  assert.equal(l.bytes, 0);
  // Through once(): a full ledger is the retryable LEDGER_UNAVAILABLE, reason full.
  const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com', ledger: new MemoryLedger({ maxBytes: 100 }) });
  const f = form('f', '?', { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] });
  const { requestState } = await g.ask(baseRequest(), [f]);
  const out = await g.resume(baseRequest({ requestState, inputResponses: { f: { action: 'accept', content: { name: 'x' } } } }));
  let ran = 0;
  await assert.rejects(g.once(out, async () => { ran++; return 'r'; }), (e) => e instanceof GuardError && e.code === codes.LEDGER_UNAVAILABLE && e.reason === 'full');
  assert.equal(ran, 0);
});

test('the ledger key is the core\'s answers digest: RFC 8785, whatever the spelling', async () => {
  const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com' });
  const f = form('f', '?', { type: 'object', properties: { name: { type: 'string' }, n: { type: 'number' } }, required: ['name', 'n'] });
  const { requestState } = await g.ask(baseRequest(), [f]);
  const digestOf = async (text) => (await g.resume(baseRequest({ requestState, inputResponses: rawJSON(text) }))).answersDigest;
  const d = await digestOf('{"f":{"action":"accept","content":{"name":"Jos\\u00e9","n":1.0}}}');
  assert.match(d, /^[0-9a-f]{64}$/);
  // SHA-256 over the domain and the RFC 8785 form, by an independent implementation.
  const want = createHash('sha256').update('mrtr-wasm/answers/v2\0' + canonicalJSON({ f: { action: 'accept', content: { name: 'José', n: 1 } } })).digest('hex');
  assert.equal(d, want);
  assert.equal(await digestOf('{"f":{"content":{"n":1,"name":"José"},"action":"accept"}}'), d);
  assert.equal(await digestOf('{"f":{"action":"accept","content":{"name":"Jos\\u00E9","n":1e0}}}'), d);
  assert.notEqual(await digestOf('{"f":{"action":"accept","content":{"name":"Jose","n":1}}}'), d);
  const o = await g.resume(baseRequest({ requestState, inputResponses: rawJSON('{"f":{"action":"accept","content":{"name":"José","n":1}}}') }));
  assert.equal(fingerprint(o), d);
  assert.equal(JSON.stringify(o).includes(d), false, 'the digest is not enumerable');
  assert.throws(() => fingerprint({ status: 'complete', answers: {} }), (e) => e.code === codes.NOT_COMPLETE);
  await g.close();
});

async function completeOutcome(g, content = { name: 'Ann', email: 'ann@example.com' }) {
  const { requestState } = await g.ask(baseRequest(), [form('contact', 'Who?', contactSchema)]);
  const req = baseRequest({ requestState, inputResponses: { contact: { action: 'accept', content } } });
  return { req, outcome: await g.resume(req) };
}

for (const [name, make, skipIt] of [
  ['memory', () => new MemoryLedger(), false],
  ['redis', () => redisLedger(redis, { prefix }), skip],
]) {
  test(`once (${name}): one effect per logical request, replays get the stored result`, { skip: skipIt }, async () => {
    const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com', ledger: make() });
    const { req, outcome } = await completeOutcome(g);
    let runs = 0;
    const book = async () => ({ booking: `b-${++runs}` });
    const first = await g.once(outcome, book);
    assert.deepEqual(first, { result: { booking: 'b-1' }, replay: false, operationId: outcome.operationId, recorded: true });
    // The same final retry again, with the answer's keys reordered.
    const again = await g.resume({ ...req, inputResponses: { contact: { content: { email: 'ann@example.com', name: 'Ann' }, action: 'accept' } } });
    assert.deepEqual(await g.once(again, book), { result: { booking: 'b-1' }, replay: true, operationId: outcome.operationId, recorded: true });
    // 20 concurrent replays: still one run.
    const all = await Promise.all(Array.from({ length: 20 }, async () => g.once(await g.resume(req), book)));
    assert.ok(all.every((r) => r.result.booking === 'b-1' && r.replay));
    assert.equal(runs, 1);
    // Other answers under the same operation id: a conflict, nothing runs.
    const other = await g.resume({ ...req, inputResponses: { contact: { action: 'accept', content: { name: 'Bob', email: 'bob@example.com' } } } });
    await assert.rejects(g.once(other, book), (e) => e instanceof GuardError && e.code === codes.CONFLICT && e.jsonRpcCode === -32602);
    assert.equal(runs, 1);
    await g.close();
  });

  test(`once (${name}): concurrent first runs, failures release, declined never runs`, { skip: skipIt }, async () => {
    const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com', ledger: make() });
    const { req, outcome } = await completeOutcome(g);
    let runs = 0;
    const slow = async () => {
      runs++;
      await sleep(50);
      return { booking: 'b-slow' };
    };
    const results = await Promise.all(Array.from({ length: 10 }, () => g.once(outcome, slow)));
    assert.equal(runs, 1);
    assert.equal(results.filter((r) => !r.replay).length, 1);
    assert.ok(results.every((r) => r.result.booking === 'b-slow'));
    // A holder that takes longer than the wait: the others get a retryable error.
    const o2 = (await completeOutcome(g)).outcome;
    let started;
    const begun = new Promise((r) => {
      started = r;
    });
    let finish;
    const gate = new Promise((r) => {
      finish = r;
    });
    const hold = g.once(o2, async () => {
      started();
      await gate; // held until the duplicate has given up: no race with a timer
      return 1;
    });
    await begun;
    await assert.rejects(g.once(o2, async () => 2, { waitMs: 100 }), (e) => e.code === codes.IN_PROGRESS && e.jsonRpcCode === -32603);
    finish();
    // The default wait is the Go host's 2 s.
    assert.equal((await hold).result, 1);
    // An effect that fails releases its claim: the retry runs it again.
    const o3 = (await completeOutcome(g)).outcome;
    await assert.rejects(g.once(o3, async () => {
      throw new Error('CRM down');
    }), /CRM down/);
    assert.deepEqual((await g.once(o3, async () => ({ ok: true }))).result, { ok: true });
    // Only complete outcomes may act.
    const { requestState } = await g.ask(baseRequest(), [form('contact', 'Who?', contactSchema)]);
    const declined = await g.resume({ ...req, requestState, inputResponses: { contact: { action: 'decline' } } });
    await assert.rejects(g.once(declined, slow), (e) => e.code === codes.NOT_COMPLETE);
    await g.close();
  });
}

test('once fails closed when Redis is unreachable: no effect, a retryable error', { skip }, async () => {
  const c = await connectRedis();
  const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com', ledger: redisLedger(c, { prefix }) });
  const { outcome } = await completeOutcome(g);
  await c.destroy();
  let runs = 0;
  await assert.rejects(g.once(outcome, () => ++runs), (e) => e.code === codes.LEDGER_UNAVAILABLE && e.jsonRpcCode === -32603 && e.reason === 'error');
  assert.equal(runs, 0);
  await g.close();
});

test('Node and Go read and write each other\'s Redis entries (same layout and scripts)', { skip }, async () => {
  const opNode = opId();
  const opGo = opId();
  // Node finishes an operation; the Go ledger reads it and refuses to run it.
  const l = redisLedger(redis, { prefix });
  const c = await l.claim(opNode, fpA, 10_000);
  await l.finish(opNode, c.token, fpA, '{"booking":"from-node"}', 60_000);
  const goURL = `${REDIS_URL}/0?prefix=${encodeURIComponent(prefix)}`;
  const [get, again, other, goFinish] = runGo({
    ops: [
      { op: 'ledger.get', redis: goURL, id: opNode },
      { op: 'ledger.claimFinish', redis: goURL, id: opNode, fp: fpA, result: { booking: 'from-go' } },
      { op: 'ledger.claimFinish', redis: goURL, id: opNode, fp: fpB, result: {} },
      { op: 'ledger.claimFinish', redis: goURL, id: opGo, fp: fpB, result: { booking: 'from-go' } },
    ],
  });
  assert.deepEqual(get.entry, { state: 'done', fingerprint: fpA, result: '{"booking":"from-node"}' });
  assert.equal(again.status, 'finished');
  assert.equal(again.result, '{"booking":"from-node"}');
  assert.equal(other.status, 'conflict');
  assert.equal(goFinish.status, 'acquired');
  // Go finished an operation: Node sees it done, with Go's result.
  assert.deepEqual(await l.claim(opGo, fpB, 10_000), { status: ClaimStatus.FINISHED, result: '{"booking":"from-go"}' });
  assert.equal((await l.claim(opGo, fpA, 10_000)).status, ClaimStatus.CONFLICT);
});

test('a Node and a Go server share one Redis ledger: one effect between them, the same fingerprint', { skip }, async () => {
  const keys = generateKey();
  const audience = 'crm.example.com';
  const goLedger = `${REDIS_URL}/0?prefix=${encodeURIComponent(prefix)}`;
  const g = await createGuard({ keys, audience, ledger: redisLedger(redis, { prefix }) });
  const seats = form('seats', 'How many seats?', { type: 'object', properties: { name: { type: 'string' }, seats: { type: 'number' } }, required: ['name', 'seats'] });
  const req = baseRequest();
  // Node asks and books; the client wrote the number in an odd form.
  const { requestState } = await g.ask(req, [seats]);
  const responses = '{"seats":{"action":"accept","content":{"name":"Ren\\u00e9e","seats":2.50E1}}}';
  const retry = { ...req, requestState, inputResponses: rawJSON(responses) };
  const mine = await g.once(await g.resume(retry), () => ({ booking: 'from-node' }));
  assert.equal(mine.replay, false);
  // Go resumes the same retry (members reordered) and gets Node's booking;
  // other answers are a conflict there too.
  const goReq = { ...req, requestState, inputResponses: goRaw(responses) };
  const reordered = { ...req, requestState, inputResponses: goRaw('{"seats":{"content":{"seats":2.50E1,"name":"Renée"},"action":"accept"}}') };
  const written = { ...req, requestState, inputResponses: goRaw('{"seats":{"action":"accept","content":{"name":"Renée","seats":25.0}}}') };
  const escaped = { ...req, requestState, inputResponses: goRaw('{"seats":{"action":"accept","content":{"name":"Ren\\u00E9e","seats":0.25e2}}}') };
  const [same, sameReordered, numberOtherwise, stringEscaped, other] = runGo({
    keys,
    audience,
    ledger: goLedger,
    ops: [
      { op: 'once', request: goReq, result: { booking: 'from-go' } },
      { op: 'once', request: reordered, result: { booking: 'from-go' } },
      { op: 'once', request: written, result: { booking: 'from-go' } },
      { op: 'once', request: escaped, result: { booking: 'from-go' } },
      { op: 'once', request: { ...goReq, inputResponses: { seats: { action: 'accept', content: { name: 'Bob', seats: 1 } } } }, result: {} },
    ],
  });
  assert.deepEqual(same, { result: '{"booking":"from-node"}', replay: true });
  assert.deepEqual(sameReordered, { result: '{"booking":"from-node"}', replay: true });
  // 25.0, 0.25e2 and 2.50E1 are one number, "Ren\u00e9e" is "Renée": the
  // core's digest is RFC 8785, so Go replays Node's booking.
  assert.deepEqual(numberOtherwise, { result: '{"booking":"from-node"}', replay: true });
  assert.deepEqual(stringEscaped, { result: '{"booking":"from-node"}', replay: true });
  assert.equal(other.error?.code, 'mrtr.ledger.conflict');
  // And the reverse: Go books first, Node replays Go's result.
  const s2 = (await g.ask(req, [seats])).requestState;
  const r2 = { ...req, requestState: s2, inputResponses: { seats: { action: 'accept', content: { seats: 3, name: 'Cy' } } } };
  const [goFirst] = runGo({ keys, audience, ledger: goLedger, ops: [{ op: 'once', request: r2, result: { booking: 'from-go' } }] });
  assert.deepEqual(goFirst, { result: '{"booking":"from-go"}' });
  let runs = 0;
  const theirs = await g.once(await g.resume({ ...r2, inputResponses: { seats: { action: 'accept', content: { name: 'Cy', seats: 3 } } } }), () => ++runs);
  assert.deepEqual(theirs.result, { booking: 'from-go' });
  assert.equal(theirs.replay, true);
  assert.equal(runs, 0);
  await g.close();
});

test('digest.json: every answersDigest is RFC 8785 by an independent implementation', () => {
  const f = JSON.parse(readFileSync(join(vectorsDir, 'digest.json'), 'utf8'));
  const digests = new Map();
  for (const c of f.cases) {
    const r = JSON.parse(c.response);
    if (r.status !== 'complete') continue;
    const want = createHash('sha256').update('mrtr-wasm/answers/v2\0' + canonicalJSON(r.answers)).digest('hex');
    assert.equal(r.answersDigest, want, c.name);
    digests.set(c.name, r.answersDigest);
  }
  assert.ok(digests.size >= 8, 'digest cases');
  const plain = digests.get('plain');
  for (const n of ['members in another order', 'numbers spelled otherwise (1e2, 1.0)', 'strings escaped otherwise']) assert.equal(digests.get(n), plain, n);
  for (const n of ['another value', 'another number', 'a field fewer']) assert.notEqual(digests.get(n), plain, n);
});
