// The same policy decisions in Node and Go: the OPA Wasm bundle of the
// shipped policies, evaluated with @open-policy-agent/opa-wasm, gives the
// decision document every shared case in testdata/policy/cases.json
// expects (the Go tests check the same cases with OPA's Go evaluator), and
// a guard with the policy refuses and narrows as the Go host does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGuard, form, url, generateKey, loadPolicy, ASK_ENTRYPOINT, RESUME_ENTRYPOINT, GuardError, codes } from '../index.js';
import { baseRequest, buildPolicyBundle, contactSchema, repoDir, runGo } from './helpers.mjs';

const dir = mkdtempSync(join(tmpdir(), 'mrtr-policy-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const bundlePath = join(dir, 'bundle.tar.gz');
console.log(buildPolicyBundle(bundlePath).trim());

const cases = JSON.parse(readFileSync(join(repoDir, 'testdata', 'policy', 'cases.json'), 'utf8'));
const dataOf = (p) => JSON.parse(readFileSync(join(repoDir, p), 'utf8'));
const demoData = join(repoDir, 'policies', 'data', 'demo.json');

test('every shared policy case gives the expected decision through opa-wasm', async () => {
  const policy = await loadPolicy(bundlePath);
  const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com' });
  assert.deepEqual(policy.entrypoints.sort(), [ASK_ENTRYPOINT, RESUME_ENTRYPOINT].sort());
  assert.ok(cases.cases.length >= 20, 'cases missing');
  for (const c of cases.cases) {
    policy.setData(dataOf(c.data));
    const ep = c.entrypoint === 'ask' ? ASK_ENTRYPOINT : RESUME_ENTRYPOINT;
    const got = policy.raw(ep, c.input);
    assert.deepEqual(got, c.expect, `${c.name} (${c.data})`);
    // Read as the core reads it for every host, an allow is an allow only with limits.
    assert.equal((await g.policyDecision(got)).allow, c.expect.allow === true && (c.expect.deny ?? []).length === 0 && c.expect.max_rounds > 0 && c.expect.ttl_seconds > 0);
  }
  await g.close();
  console.log(`${cases.cases.length} shared policy cases: the same decisions in Node (opa-wasm) as in Go`);
});

test('an undefined or malformed decision never allows', async () => {
  const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com' });
  assert.equal((await g.policyDecision(undefined)).allow, false);
  assert.equal((await g.policyDecision(null)).deny[0].message, 'the policy gave no decision');
  assert.equal((await g.policyDecision({ allow: true })).allow, false, 'no limits');
  assert.equal((await g.policyDecision({ allow: true, max_rounds: 2, ttl_seconds: 60, deny: 'x' })).deny[0].code, 'policy.undecided');
  assert.equal((await g.policyDecision({ allow: true, max_rounds: 2, ttl_seconds: 60, deny: [{ code: 'policy.x' }] })).allow, false, 'deny wins');
  assert.equal((await g.policyDecision({ allow: true, max_rounds: 2, ttl_seconds: 60 })).allow, true);
  await g.close();
});

// A custom policy's answers, refused or allowed by the core as Go's
// host.PolicyDecision is, on ask and on resume.
test('a custom policy: the core decides, on ask and on resume', async () => {
  let answer;
  const policy = { ask: () => answer, resume: () => answer };
  const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com', policy });
  const req = baseRequest();
  answer = { allow: true, maxRounds: 2, ttl: 60 };
  const r = await g.ask(req, [form('contact', 'Who?', contactSchema)]);
  const retry = { ...req, requestState: r.requestState, inputResponses: {} };
  for (const [name, a, reason] of [
    ['no decision', undefined, 'policy.undecided'],
    ['allow false', { allow: false }, 'policy.undecided'],
    ['allow with a denial', { allow: true, denials: [{ code: 'x.no', rule: '', message: 'no' }] }, 'x.no'],
    ['allow with a code', { allow: true, code: 'x.c', rule: 'r' }, 'x.c (r)'],
    ['allow that is truthy, not true', { allow: 1 }, 'policy.undecided'],
    ['a function', () => true, 'policy.undecided'],
  ]) {
    answer = a;
    for (const call of [() => g.ask(req, [form('contact', 'Who?', contactSchema)]), () => g.resume(retry)]) {
      const e = await call().then(() => null, (x) => x);
      assert.ok(GuardError.is(e, codes.POLICY_DENIED), `${name}: ${e}`);
      assert.equal(e.reason, reason, name);
    }
  }
  // Allowed again, the retry goes on (a re-ask: nothing was answered).
  answer = { allow: true };
  assert.equal((await g.resume(retry)).status, 'input_required');
  await g.close();
});

test('a guard with the policy: the same refusals and limits as the Go host', async () => {
  const keys = generateKey();
  const audience = 'crm.example.com';
  const policy = await loadPolicy(bundlePath, { data: dataOf('policies/data/demo.json') });
  const g = await createGuard({ keys, audience, policy });
  const req = baseRequest();
  const secretish = form('contact', 'Who?', { type: 'object', properties: { name: { type: 'string' }, passport: { type: 'string', title: 'Passport number' } } });
  const calendar = url('calendar', 'Connect', 'https://evil.example.net/connect');
  const unknownTool = baseRequest({ target: 'nobody_described_this' });
  const asks = [
    [req, [form('contact', 'Who?', contactSchema)]],
    [req, [secretish]],
    [req, [calendar]],
    [unknownTool, [form('contact', 'Who?', contactSchema)]],
  ];
  const goResults = runGo({
    keys,
    audience,
    policy: demoData,
    ops: asks.map(([request, inputs]) => ({ op: 'ask', request, inputs })),
  });
  for (const [i, [request, inputs]] of asks.entries()) {
    const mine = await g.ask(request, inputs).catch((e) => e);
    const theirs = goResults[i];
    if (theirs.error) {
      assert.ok(mine instanceof GuardError, `case ${i}: Go refused (${theirs.error.message}), Node did not`);
      assert.deepEqual(mine.toJSON(), theirs.error, `case ${i}`);
      if (mine.code === codes.POLICY_DENIED) assert.equal(mine.jsonRpcCode, -32602);
    } else {
      assert.ok(!(mine instanceof Error), `case ${i}: Node refused: ${mine.message}`);
      assert.deepEqual(Object.keys(mine.inputRequests), Object.keys(theirs.result.inputRequests).sort());
      // The policy's TTL shows in the state: the same lifetime in both
      // (Go's state opens here too: same keys and audience).
      const lifetime = async (state) => {
        const o = await g.open({ ...request, requestState: state });
        return (Date.parse(o.expiresAt) - Date.parse(o.issuedAt)) / 1000;
      };
      const expected = dataOf('policies/data/demo.json').tools[request.target]?.ttl_seconds ?? dataOf('policies/data/demo.json').default.ttl_seconds;
      assert.equal(await lifetime(mine.requestState), expected);
      assert.equal(await lifetime(theirs.result.requestState), expected);
    }
  }
  assert.ok(goResults.some((r) => r.error?.code === codes.POLICY_DENIED), 'at least one case is a policy refusal');
  assert.ok(goResults.some((r) => !r.error), 'at least one case is allowed');

  // A retry the policy refuses fails in both, before the state is opened
  // (the JavaScript host once carried on with one round left). Here a tool
  // nobody described has the guard's own round limit (3), above the
  // data's bounds.
  const guardRounds = dataOf('policies/data/demo.json');
  guardRounds.limits.max_rounds.max = 2;
  delete guardRounds.default.max_rounds;
  guardRounds.tools.book_demo_call.max_rounds = 2;
  const guardRoundsPath = join(dir, 'guard-rounds.json');
  writeFileSync(guardRoundsPath, JSON.stringify(guardRounds));
  policy.setData(guardRounds);
  const retries = [
    { ...unknownTool, requestState: 'v4.local.not-opened', inputResponses: {} },
    { ...req, requestState: 'v4.local.not-opened', inputResponses: {} },
  ];
  const goRetries = runGo({ keys, audience, policy: guardRoundsPath, ops: retries.map((request) => ({ op: 'resume', request })) });
  for (const [i, request] of retries.entries()) {
    const mine = await g.resume(request).catch((e) => e);
    assert.ok(mine instanceof GuardError && goRetries[i].error, `retry ${i}: ${mine} / ${JSON.stringify(goRetries[i])}`);
    assert.deepEqual(mine.toJSON(), goRetries[i].error, `retry ${i}`);
  }
  assert.equal(goRetries[0].error.code, codes.POLICY_DENIED, 'the unknown tool is refused on resume');
  assert.equal(goRetries[1].error.code, codes.STATE_INVALID, 'the known tool gets as far as the state');
  await g.close();
});
