// Edge cases of the guard: each of these failed on the code before its
// fix (an effect whose result is not JSON, once timing options, an
// oversized request, what an outcome prints, numbers JSON cannot hold).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { createGuard, form, generateKey, GuardError, codes, MemoryLedger, rawJSON } from '../index.js';
import { baseRequest, contactSchema } from './helpers.mjs';

async function completeOutcome(g) {
  const { requestState } = await g.ask(baseRequest(), [form('contact', 'Who?', contactSchema)]);
  const req = baseRequest({ requestState, inputResponses: { contact: { action: 'accept', content: { name: 'Ann', email: 'ann@example.com' } } } });
  return { req, outcome: await g.resume(req) };
}

const isCode = (code) => (e) => e instanceof GuardError && e.code === code;

test('an effect whose result is not JSON still finishes its operation: a retry does not run it again', async () => {
  const ledger = new MemoryLedger();
  const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com', ledger, leaseMs: 50 });
  for (const bad of [() => ({ id: 10n }), () => () => 1, () => { const o = {}; o.self = o; return o; }]) {
    const { req, outcome } = await completeOutcome(g);
    let runs = 0;
    const effect = async () => { runs++; return bad(); };
    await assert.rejects(g.once(outcome, effect), (e) => isCode(codes.INTERNAL)(e) && e.reason === 'result_not_json' && /carried out/.test(e.message));
    assert.equal((await ledger.get(outcome.operationId)).state, 'done');
    await new Promise((r) => setTimeout(r, 80)); // past the lease
    const again = await g.once(await g.resume(req), effect);
    assert.deepEqual(again, { result: null, replay: true, operationId: outcome.operationId, recorded: true });
    assert.equal(runs, 1);
  }
  await g.close();
});

test('once timing options must be positive numbers of milliseconds', async () => {
  for (const bad of [{ leaseMs: 0 }, { leaseMs: Number.NaN }, { marginMs: -900_000 }, { waitMs: -1 }, { ledgerTimeoutMs: '5' }]) {
    await assert.rejects(createGuard({ keys: generateKey(), audience: 'crm.example.com', ...bad }), isCode(codes.CONFIG_INVALID), JSON.stringify(bad));
    const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com' });
    const { outcome } = await completeOutcome(g);
    let runs = 0;
    await assert.rejects(g.once(outcome, async () => ++runs, bad), isCode(codes.CONFIG_INVALID));
    assert.equal(runs, 0);
    await g.close();
  }
});

test('a request over 1 MiB is refused before it reaches an instance, whose memory does not grow', async () => {
  const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com', poolSize: 1 });
  const { requestState } = await g.ask(baseRequest(), [form('contact', 'Who?', contactSchema)]);
  const before = (await g.stats()).heapSys;
  for (const args of [rawJSON('"' + 'a'.repeat(8 << 20) + '"'), { s: 'é'.repeat(600_000) }]) {
    await assert.rejects(g.resume(baseRequest({ requestState, arguments: args })), isCode(codes.REQUEST_TOO_LARGE));
  }
  assert.equal((await g.stats()).heapSys, before);
  // Just under the limit in characters but over it in bytes: refused too.
  await assert.rejects(g.resume(baseRequest({ requestState, arguments: { s: '€'.repeat(350_000) } })), isCode(codes.REQUEST_TOO_LARGE));
  await g.close();
});

test('an outcome that asks again prints neither the answers kept as defaults nor the state', async () => {
  const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com' });
  const { requestState } = await g.ask(baseRequest(), [form('contact', 'Who?', contactSchema)]);
  const o = await g.resume(baseRequest({ requestState, inputResponses: { contact: { action: 'accept', content: { name: 'Alice Secretname', email: 'not an email' } } } }));
  assert.equal(o.status, 'input_required');
  assert.ok(JSON.stringify(o.inputRequired).includes('Alice Secretname'), 'the re-ask keeps the valid answer as a default');
  for (const shown of [inspect(o, { depth: 10 }), JSON.stringify(o)]) {
    assert.ok(!shown.includes('Secretname') && !shown.includes('v4.local.'), shown);
  }
  assert.match(inspect(o), /inputRequired: true/);
  await g.close();
});

test('numbers JSON cannot hold are refused, not sent as null', async () => {
  const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com' });
  for (const v of [Infinity, -Infinity, NaN, JSON.parse('1e400')]) {
    await assert.rejects(g.ask(baseRequest({ arguments: { x: v } }), [form('contact', 'Who?', contactSchema)]), isCode(codes.JSON_SYNTAX));
  }
  await g.close();
});
