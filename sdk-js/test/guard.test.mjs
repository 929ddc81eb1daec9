// The guard API against the real guard.wasm: the same outcomes and codes
// as the Go host, no envelope injection, trap recovery, interrupts,
// memory growth, keys that never show.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import util from 'node:util';
import * as api from '../index.js';
import { createGuard, form, url, sampling, roots, generateKey, rawJSON, GuardError, codes, isRetry } from '../index.js';
import { seams } from '../src/seams.js';
import { baseRequest, contactSchema, keyA, vectorsDir } from './helpers.mjs';

const key1 = generateKey();
const guard = await createGuard({ keys: key1, audience: 'crm.example.com' });
const ask = (over = {}, inputs = [form('contact', 'Who should we book the demo for?', contactSchema)], opts) =>
  guard.ask(baseRequest(over), inputs, opts);
const resume = (state, responses, over = {}) => guard.resume(baseRequest({ requestState: state, inputResponses: responses, ...over }));
const accept = (content) => ({ contact: { action: 'accept', content } });

async function rejects(p, code, reason) {
  await assert.rejects(p, (e) => {
    assert.ok(e instanceof GuardError, `not a GuardError: ${e}`);
    assert.equal(e.code, code, e.message);
    if (reason !== undefined) assert.equal(e.reason, reason);
    return true;
  });
}

test('the envelope carries the host clock and random bytes as the Go host does: the exact vector token', async () => {
  const v = JSON.parse(readFileSync(join(vectorsDir, 'resume.json'), 'utf8'));
  const c = v.cases.find((x) => x.name === 'ask contact');
  const env = JSON.parse(c.request);
  const g = await createGuard({
    keys: keyA,
    audience: 'vectors.example',
    [seams]: { clock: () => env.now, random: (b) => b.set(Buffer.from(env.rand, 'base64url')) },
  });
  const res = await g.ask(
    { principal: env.principal, method: env.method, target: env.target, arguments: env.arguments, capabilities: env.capabilities },
    [form('contact', 'Who should we book the demo for?', contactSchema)],
  );
  assert.deepEqual(res, JSON.parse(c.response).result);
  await g.close();
});

test('ask then resume: complete, with the answers kept and unasked fields dropped', async () => {
  const res = await ask();
  assert.equal(res.resultType, 'input_required');
  assert.match(res.requestState, /^v4\.local\./);
  assert.deepEqual(Object.keys(res.inputRequests), ['contact']);
  assert.ok(isRetry({ requestState: res.requestState }));
  const out = await resume(res.requestState, accept({ name: 'Ann', email: 'ann@example.com', role: 'admin' }));
  assert.equal(out.status, 'complete');
  assert.equal(out.round, 1);
  assert.match(out.operationId, /^[A-Za-z0-9_-]{22}$/);
  assert.deepEqual(out.content('contact'), { name: 'Ann', email: 'ann@example.com' });
  // The answers never show when an outcome is logged.
  assert.ok(!JSON.stringify(out).includes('ann@example.com'));
  assert.ok(!util.inspect(out).includes('ann@example.com'));
});

test('decline, cancel, and a re-ask that names the wrong field', async () => {
  const res = await ask();
  const d = await resume(res.requestState, { contact: { action: 'decline' } });
  assert.equal(d.status, 'declined');
  assert.deepEqual(d.declined, ['contact']);
  const c = await resume(res.requestState, { contact: { action: 'cancel' } });
  assert.equal(c.status, 'cancelled');
  assert.deepEqual(c.cancelled, ['contact']);
  const r = await resume(res.requestState, accept({ name: 'Ann', email: 'not-an-email' }));
  assert.equal(r.status, 'input_required');
  assert.equal(r.round, 2);
  const again = r.inputRequired.inputRequests.contact.params;
  assert.match(again.message, /email/i);
  assert.equal(again.requestedSchema.properties.name.default, 'Ann');
  const done = await resume(r.inputRequired.requestState, accept({ name: 'Ann', email: 'ann@example.com' }));
  assert.equal(done.status, 'complete');
  assert.equal(done.operationId, r.operationId);
  const missing = await resume(res.requestState, accept({ name: 'Ann' }));
  assert.equal(missing.status, 'input_required');
});

test('the round limit (maxRounds on resume, as the Go policy sets it)', async () => {
  let state = (await ask()).requestState;
  const r = await guard.resume(baseRequest({ requestState: state, inputResponses: accept({ name: 'Ann' }) }), { maxRounds: 2 });
  assert.equal(r.status, 'input_required');
  state = r.inputRequired.requestState;
  const e = await guard.resume(baseRequest({ requestState: state, inputResponses: accept({ name: 'Ann' }) }), { maxRounds: 2 }).catch((x) => x);
  assert.equal(e.code, codes.ROUNDS_EXCEEDED);
  assert.deepEqual(e.data.fields, ['contact.email']);
});

test('progress bytes and a further round after a complete one', async () => {
  const res = await ask({}, undefined, { progress: 'step-1' });
  const out = await resume(res.requestState, accept({ name: 'Ann', email: 'ann@example.com' }));
  assert.equal(new TextDecoder().decode(out.progress), 'step-1');
  const confirm = form('confirm', 'Book it?', { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] });
  const next = await guard.ask(baseRequest(), [confirm], { after: out });
  const fin = await resume(next.requestState, { confirm: { action: 'accept', content: { ok: true } } });
  assert.equal(fin.status, 'complete');
  assert.equal(fin.operationId, out.operationId);
  assert.deepEqual(Object.keys(fin.answers).sort(), ['confirm', 'contact']);
  await rejects(guard.ask(baseRequest(), [confirm], { after: { status: 'declined' } }), codes.REQUEST_MALFORMED);
});

test('url, sampling and roots requests', async () => {
  const res = await ask({ capabilities: { elicitation: { url: {} }, sampling: {}, roots: {} } }, [
    url('calendar', 'Connect your calendar on our site.', 'https://crm.example.com/connect/7f3a'),
    sampling('summary', { messages: [{ role: 'user', content: { type: 'text', text: 'Summarise' } }], maxTokens: 50 }),
    roots('roots'),
  ]);
  assert.deepEqual(Object.keys(res.inputRequests).sort(), ['calendar', 'roots', 'summary']);
  const out = await resume(
    res.requestState,
    {
      calendar: { action: 'accept' },
      summary: { role: 'assistant', content: { type: 'text', text: 'ok' }, model: 'm1' },
      roots: { roots: [{ uri: 'file:///home/ann' }] },
    },
    { capabilities: { elicitation: { url: {} }, sampling: {}, roots: {} } },
  );
  assert.equal(out.status, 'complete');
});

test('a state opens only for its principal, method, target, arguments and audience', async () => {
  const { requestState: s } = await ask();
  await rejects(resume(s, {}, { principal: 'mallory' }), codes.STATE_INVALID, 'principal');
  await rejects(resume(s, {}, { target: 'delete_account' }), codes.STATE_INVALID, 'target');
  await rejects(resume(s, {}, { method: 'prompts/get' }), codes.STATE_INVALID, 'method');
  await rejects(resume(s, {}, { arguments: { topic: 'refunds' } }), codes.STATE_INVALID, 'arguments');
  const other = await createGuard({ keys: key1, audience: 'other.example' });
  await rejects(other.resume(baseRequest({ requestState: s })), codes.STATE_INVALID, 'audience');
  await other.close();
  // Same arguments, other key order and spacing: RFC 8785 makes them equal.
  const ok = await resume(s, {}, { arguments: rawJSON('{ "topic" : "pricing" }') });
  assert.equal(ok.status, 'input_required');
  const flipped = s.slice(0, 20) + (s[20] === 'A' ? 'B' : 'A') + s.slice(21);
  const e = await resume(flipped, {}).catch((x) => x);
  assert.equal(e.code, codes.STATE_INVALID);
  assert.equal(e.message, 'invalid or expired requestState');
  assert.equal(e.jsonRpcCode, -32602);
  await rejects(resume('v4.local.garbage', {}), codes.STATE_INVALID, 'malformed');
  await rejects(guard.resume(baseRequest()), codes.REQUEST_MALFORMED);
});

test('the seams are not options: clock, random and testHooks given by name do nothing', async () => {
  const g = await createGuard({ keys: key1, audience: 'crm.example.com', clock: () => 0, random: (b) => b.fill(0), testHooks: true });
  const a = await g.ask(baseRequest(), [form('contact', 'Who?', contactSchema)]);
  const b = await g.ask(baseRequest(), [form('contact', 'Who?', contactSchema)]);
  assert.notEqual(a.requestState, b.requestState, 'fake randomness reached the guard');
  assert.equal((await g.open(baseRequest({ requestState: a.requestState }))).status, 'open', 'a fake clock at 0 reached the guard');
  assert.throws(() => g[Symbol.for('mrtr-wasm.test.instance')](), /test hooks are off/);
  assert.ok(!('seams' in api), 'index.js exports the seams');
  await g.close();
});

test('expiry follows the clock passed in', async () => {
  let now = Date.now();
  const g = await createGuard({ keys: key1, audience: 'crm.example.com', ttl: 60, [seams]: { clock: () => now } });
  const { requestState } = await g.ask(baseRequest(), [form('contact', 'Who?', contactSchema)]);
  now += 59_000;
  assert.equal((await g.open(baseRequest({ requestState }))).status, 'open');
  now += 1_000;
  await rejects(g.resume(baseRequest({ requestState })), codes.STATE_INVALID, 'expired');
  await g.close();
});

test('an ask or a policy narrows the TTL, never widens it', async () => {
  let now = Date.now();
  const policy = { ask: () => ({ allow: true, ttl: 600 }), resume: () => ({ allow: true }) };
  const g = await createGuard({ keys: key1, audience: 'crm.example.com', ttl: 60, policy, [seams]: { clock: () => now } });
  const { requestState } = await g.ask(baseRequest(), [form('contact', 'Who?', contactSchema)], { ttl: 3600 });
  now += 61_000;
  await rejects(g.resume(baseRequest({ requestState })), codes.STATE_INVALID, 'expired'); // the guard's 60 s, not 600 or 3600
  await g.close();

  // The narrowest of the ask's and the policy's counts.
  now = Date.now();
  const narrow = { ask: () => ({ allow: true, ttl: 30, maxRounds: 1 }), resume: () => ({ allow: true }) };
  const h = await createGuard({ keys: key1, audience: 'crm.example.com', ttl: 60, maxRounds: 4, policy: narrow, [seams]: { clock: () => now } });
  const s = (await h.ask(baseRequest(), [form('contact', 'Who?', contactSchema)], { ttl: 45 })).requestState;
  now += 29_000;
  const done = await h.resume(baseRequest({ requestState: s, inputResponses: { contact: { action: 'accept', content: { name: 'Ann', email: 'ann@example.com' } } } }));
  assert.equal(done.status, 'complete');
  // The ledger keeps it for the guard's own rounds × TTL, whatever the policy.
  assert.equal(done.rememberSeconds, 240);
  now += 1_000;
  await rejects(h.resume(baseRequest({ requestState: s })), codes.STATE_INVALID, 'expired');
  await h.close();
});

test('open reports the shape of a state, never its answers', async () => {
  const { requestState } = await ask();
  const o = await guard.open(baseRequest({ requestState }));
  assert.equal(o.status, 'open');
  assert.deepEqual(o.pending, ['contact']);
  assert.equal(o.round, 1);
});

test('capabilities are checked per request', async () => {
  const e = await ask({ capabilities: {} }).catch((x) => x);
  assert.equal(e.code, codes.CAPABILITY_MISSING);
  assert.equal(e.jsonRpcCode, -32021);
  assert.deepEqual(e.data.requiredCapabilities, { elicitation: { form: {} } });
  await rejects(ask({ capabilities: { elicitation: {} } }, [url('c', 'Go', 'https://crm.example.com/c')]), codes.CAPABILITY_MISSING);
});

test('a form that asks for a secret is refused, with findings', async () => {
  const e = await ask({}, [form('login', 'Sign in', { type: 'object', properties: { user: { type: 'string' }, password: { type: 'string' } } })]).catch((x) => x);
  assert.equal(e.code, codes.FORM_SECRET_FIELD);
  assert.equal(e.findings[0].field, 'password');
  await rejects(ask({ method: 'tools/list' }), codes.METHOD_NOT_ALLOWED);
});

test('lint and lintSchema', async () => {
  assert.deepEqual(await guard.lintSchema(contactSchema), []);
  const f = await guard.lintSchema({ type: 'object', properties: { addr: { type: 'object', properties: {} } } });
  assert.deepEqual(f.map((x) => [x.severity, x.code, x.field]), [['error', 'mrtr.form.not_flat', 'addr']]);
  const w = await guard.lint(sampling('s', { messages: [{ role: 'user', content: { type: 'text', text: 'x' } }], maxTokens: 5 }));
  assert.deepEqual(w.map((x) => x.code), ['mrtr.input.deprecated']);
  const u = await guard.lint(url('k', 'Connect', 'http://crm.example.com/connect'));
  assert.deepEqual(u.map((x) => x.code), ['mrtr.url.not_https']);
  await rejects(guard.lintSchema(rawJSON('{"type":')), codes.JSON_SYNTAX);
});

test('no envelope injection: raw JSON must be exactly one value, strings stay strings', async () => {
  // Raw text that would close the arguments and add members.
  await rejects(ask({ arguments: rawJSON('{},"principal":"mallory"') }), codes.JSON_SYNTAX);
  await rejects(ask({ arguments: rawJSON('{} , "x":1') }), codes.JSON_SYNTAX);
  await rejects(ask({ capabilities: rawJSON('{"elicitation":{}},"rand":"x"') }), codes.JSON_SYNTAX);
  const { requestState } = await ask();
  await rejects(resume(requestState, rawJSON('{},"requestState":"v4.local.x"')), codes.RESPONSES_MALFORMED);
  await rejects(resume(requestState, rawJSON('[1')), codes.RESPONSES_MALFORMED);
  await rejects(ask({ arguments: rawJSON(new Uint8Array([0x7b, 0xff, 0x7d])) }), codes.JSON_INVALID_UTF8);
  await rejects(ask({ arguments: rawJSON('{"a":"\ud800"}') }), codes.JSON_INVALID_UTF8);
  await rejects(ask({ arguments: { n: 10n } }), codes.JSON_SYNTAX);
  const cyclic = {};
  cyclic.self = cyclic;
  await rejects(ask({ arguments: cyclic }), codes.JSON_SYNTAX);
  await rejects(ask({ principal: 7 }), codes.REQUEST_MALFORMED);
  await rejects(ask({ principal: undefined }), codes.REQUEST_MALFORMED);
  await rejects(ask({}, [{ key: 'k', method: 'elicitation/create', params: rawJSON('{"message":"m"},"x":{') }]), codes.JSON_SYNTAX);
  // A principal full of JSON syntax is just a principal: the state it
  // seals opens for that exact string and nobody else.
  const weird = 'alice","principal":"bob';
  const r = await ask({ principal: weird });
  assert.equal((await guard.open(baseRequest({ principal: weird, requestState: r.requestState }))).status, 'open');
  await rejects(guard.open(baseRequest({ principal: 'bob', requestState: r.requestState })), codes.STATE_INVALID, 'principal');
});

test('bad input gets the same codes as the Go side', async () => {
  await rejects(ask({ arguments: rawJSON('{"n":1e1000001}') }), codes.ARGUMENTS_MALFORMED);
  await rejects(ask({ arguments: rawJSON('{"a":1,"a":2}') }), codes.JSON_DUPLICATE_KEY);
  await rejects(ask({ arguments: { big: 'a'.repeat(1 << 20) } }), codes.REQUEST_TOO_LARGE);
  const { requestState } = await ask();
  await rejects(resume(requestState, { contact: { action: 'maybe' } }), codes.RESPONSES_MALFORMED);
  await rejects(resume(requestState + 'A'.repeat(8192), {}), codes.STATE_INVALID, 'oversize');
  // Still usable afterwards.
  assert.equal((await ask()).resultType, 'input_required');
});

test('memory growth: views are re-created, answers stay exact', async () => {
  const g = await createGuard({ keys: key1, audience: 'crm.example.com', [seams]: { testHooks: true } });
  const inst = g[Symbol.for('mrtr-wasm.test.instance')]();
  const before = inst.memorySize;
  for (let i = 0; i < 6; i++) {
    const big = { topic: 'x'.repeat(900_000 - i) };
    const r = await g.ask(baseRequest({ arguments: big }), [form('contact', 'Who?', contactSchema)]);
    const o = await g.open(baseRequest({ arguments: big, requestState: r.requestState }));
    assert.equal(o.status, 'open');
  }
  assert.equal(g[Symbol.for('mrtr-wasm.test.instance')](), inst, 'same instance');
  assert.ok(inst.memorySize > before, `memory grew: ${before} -> ${inst.memorySize}`);
  assert.equal((await g.ask(baseRequest(), [form('contact', 'Who?', contactSchema)])).resultType, 'input_required');
  await g.close();
});

test('a trap replaces the instance instead of leaving a broken one in use', async () => {
  assert.throws(() => guard[Symbol.for('mrtr-wasm.test.instance')](), /test hooks are off/);
  const g = await createGuard({ keys: key1, audience: 'crm.example.com', [seams]: { testHooks: true } });
  const { requestState } = await g.ask(baseRequest(), [form('contact', 'Who?', contactSchema)]);
  const inst = g[Symbol.for('mrtr-wasm.test.instance')]();
  // Wreck the instance's linear memory: the next call traps for real.
  new Uint8Array(inst.memoryForTests.buffer).fill(0xff);
  await rejects(g.resume(baseRequest({ requestState })), codes.INTERNAL);
  const out = await g.resume(baseRequest({ requestState, inputResponses: accept({ name: 'Ann', email: 'ann@example.com' }) }));
  assert.equal(out.status, 'complete', 'the new instance has the same keys');
  assert.notEqual(g[Symbol.for('mrtr-wasm.test.instance')](), inst);
  await g.close();
});

test('interrupts: a call past its deadline stops at a checkpoint; an aborted call never starts', async () => {
  const g = await createGuard({ keys: key1, audience: 'crm.example.com', callTimeout: 1e-6 });
  await rejects(g.ask(baseRequest({ arguments: { a: Array.from({ length: 20000 }, (_, i) => i) } }), []), codes.UNAVAILABLE);
  await g.close();
  const ac = new AbortController();
  ac.abort();
  await rejects(guard.ask(baseRequest(), [], { signal: ac.signal }), codes.UNAVAILABLE);
  assert.equal((await ask()).resultType, 'input_required');
});

test('the module gets real entropy and a real clock', async () => {
  const a = await guard.stats();
  const b = await guard.stats();
  assert.match(a.random, /^[0-9a-f]{32}$/);
  assert.notEqual(a.random, b.random);
  assert.ok(Math.abs(a.nowMs - Date.now()) < 5000, 'wall clock');
  // 48 fresh bytes per call: two asks of the same request differ.
  const [x, y] = [await ask(), await ask()];
  assert.notEqual(x.requestState, y.requestState);
});

test('the module collects its garbage between calls, when it asks, not inside them', async () => {
  // At 8 MiB the module's runtime would collect several times in these
  // calls; each collection must be one the host ran after a call.
  const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com', memoryLimitMiB: 8 });
  const inputs = [form('contact', 'Who should we book the demo for?', contactSchema)];
  for (let i = 0; i < 1500; i++) {
    const { requestState } = await g.ask(baseRequest(), inputs);
    const out = await g.resume(baseRequest({ requestState, inputResponses: accept({ name: 'Ann', email: 'ann@example.com' }) }));
    assert.equal(out.status, 'complete');
    if (i % 20 === 19) await new Promise((r) => setTimeout(r, 0)); // the task a server would yield to
  }
  await new Promise((r) => setTimeout(r, 0));
  const st = await g.stats();
  assert.ok(st.collections > 0, JSON.stringify(st));
  assert.equal(st.numGC, st.collections, `the runtime collected inside calls: ${JSON.stringify(st)}`);
  await g.close();
});

test('key rotation: new primary seals, old keys open until removed', async () => {
  const oldKey = generateKey();
  const newKey = generateKey();
  const g = await createGuard({ keys: oldKey, audience: 'crm.example.com' });
  const { requestState } = await g.ask(baseRequest(), [form('contact', 'Who?', contactSchema)]);
  await g.setKeys(`${newKey}\n# the old key, until its states expire\n${oldKey}`);
  assert.equal(g.keyIds.length, 2);
  assert.equal((await g.open(baseRequest({ requestState }))).status, 'open');
  await g.setKeys([newKey]);
  await rejects(g.open(baseRequest({ requestState })), codes.STATE_INVALID, 'unknown_key');
  await g.close();
  await rejects(g.ask(baseRequest(), []), codes.UNAVAILABLE);
});

test('keys never show: not in inspect, JSON or errors', async () => {
  const k = generateKey();
  const g = await createGuard({ keys: k, audience: 'crm.example.com' });
  const body = k.slice('k4.local.'.length);
  for (const shown of [util.inspect(g, { showHidden: true, depth: 10 }), JSON.stringify(g), String(g), util.format('%o %O %j', g, g, g)]) {
    assert.ok(!shown.includes(body), shown);
  }
  assert.match(util.inspect(g), /1 keys redacted/);
  const bad = k.slice(0, -1) + '!';
  const e = await createGuard({ keys: `${k},${bad}` }).catch((x) => x);
  assert.equal(e.code, codes.CONFIG_INVALID);
  assert.equal(e.message, 'mrtr: key 2: a k4.local key holds 32 bytes in base64url without padding');
  assert.ok(!util.inspect(e).includes(body));
  await rejects(createGuard({}), codes.CONFIG_INVALID);
  await rejects(createGuard({ keys: k, ttl: 0 }), codes.CONFIG_INVALID);
  await g.close();
});

test('the options named with their units, and their deprecated names', async () => {
  const k = generateKey();
  const big = 'x'.repeat(600); // sealed progress: a state of more than 512 bytes
  for (const [name, opts] of [
    ['maxStateBytes', { maxStateBytes: 512 }],
    ['maxStateSize (deprecated)', { maxStateSize: 512 }],
  ]) {
    const g = await createGuard({ keys: k, audience: 'crm.example.com', ...opts });
    await rejects(g.ask(baseRequest(), [], { progress: big }), codes.REQUEST_TOO_LARGE);
    await g.close();
  }
  const roomy = await createGuard({ keys: k, audience: 'crm.example.com', maxStateBytes: 4096 });
  assert.ok((await roomy.ask(baseRequest(), [], { progress: big })).requestState.length > 512);
  await roomy.close();
  for (const [name, opts] of [
    ['memoryLimitMiB', { memoryLimitMiB: 16 }],
    ['memoryLimit (deprecated)', { memoryLimit: 16 }],
  ]) {
    const g = await createGuard({ keys: k, ...opts });
    assert.equal((await g.stats()).memoryLimit, 16 << 20, name);
    await g.close();
  }
  await rejects(createGuard({ keys: k, maxStateBytes: 512, maxStateSize: 512 }), codes.CONFIG_INVALID);
  await rejects(createGuard({ keys: k, memoryLimitMiB: 16, memoryLimit: 16 }), codes.CONFIG_INVALID);
  await rejects(createGuard({ keys: k, memoryLimitMiB: 1.5 }), codes.CONFIG_INVALID);
  await rejects(createGuard({ keys: k, maxStateBytes: 100 }), codes.REQUEST_MALFORMED); // below 512: the core's check, as in Go
  await rejects(createGuard({ keys: k, maxStateBytes: '8192' }), codes.CONFIG_INVALID);
});

test('the sha256 of what a guard runs is the shipped module', async () => {
  const h = createHash('sha256').update(readFileSync(new URL('../guard.wasm', import.meta.url))).digest('hex');
  assert.match(h, /^[0-9a-f]{64}$/);
});
