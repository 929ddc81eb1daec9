// The same policy decisions in Node and Go: the OPA Wasm bundle of the
// shipped policies, evaluated with @open-policy-agent/opa-wasm, gives the
// decision document every shared case in testdata/policy/cases.json
// expects (the Go tests check the same cases with OPA's Go evaluator), and
// a guard with the policy refuses and narrows as the Go host does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGuard, form, url, generateKey, loadPolicy, decisionFrom, ASK_ENTRYPOINT, RESUME_ENTRYPOINT, GuardError, codes } from '../index.js';
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
  assert.deepEqual(policy.entrypoints.sort(), [ASK_ENTRYPOINT, RESUME_ENTRYPOINT].sort());
  assert.ok(cases.cases.length >= 20, 'cases missing');
  for (const c of cases.cases) {
    policy.setData(dataOf(c.data));
    const ep = c.entrypoint === 'ask' ? ASK_ENTRYPOINT : RESUME_ENTRYPOINT;
    const got = policy.raw(ep, c.input);
    assert.deepEqual(got, c.expect, `${c.name} (${c.data})`);
    // Read as the host reads it, an allow is an allow only with limits.
    assert.equal(decisionFrom(got).allow, c.expect.allow === true && (c.expect.deny ?? []).length === 0 && c.expect.max_rounds > 0 && c.expect.ttl_seconds > 0);
  }
  console.log(`${cases.cases.length} shared policy cases: the same decisions in Node (opa-wasm) as in Go`);
});

test('an undefined or malformed decision never allows', () => {
  assert.equal(decisionFrom(undefined).allow, false);
  assert.equal(decisionFrom({ allow: true }).allow, false, 'no limits');
  assert.equal(decisionFrom({ allow: true, max_rounds: 2, ttl_seconds: 60, deny: 'x' }).deny[0].code, 'policy.undecided');
  assert.equal(decisionFrom({ allow: true, max_rounds: 2, ttl_seconds: 60, deny: [{ code: 'policy.x' }] }).allow, false, 'deny wins');
  assert.equal(decisionFrom({ allow: true, max_rounds: 2, ttl_seconds: 60 }).allow, true);
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
  await g.close();
});
