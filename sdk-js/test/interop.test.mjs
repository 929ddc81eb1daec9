// Tokens sealed by the Go host (host.Guard over wazero) open in Node and
// the reverse, with the same outcomes and the same refusals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createGuard, form, url, generateKey } from '../index.js';
import { baseRequest, contactSchema, runGo } from './helpers.mjs';

const keys = `${generateKey()}\n${generateKey()}`;
const audience = 'crm.example.com';
const node = await createGuard({ keys, audience });
const inputs = [form('contact', 'Who should we book the demo for?', contactSchema), url('calendar', 'Connect your calendar.', 'https://crm.example.com/connect/1')];
const args = { topic: 'pricing', seats: 3, when: ['mon', 'tue'], note: 'ünïcode ✓' };
const req = baseRequest({ arguments: args });
const good = { contact: { action: 'accept', content: { name: 'Ann Lee', email: 'ann@example.com' } }, calendar: { action: 'accept' } };
const bad = { contact: { action: 'accept', content: { name: 'Ann Lee', email: 'nope' } }, calendar: { action: 'accept' } };

// What Node's Outcome says, in the Go helper's JSON shape.
function plain(o) {
  const r = { status: o.status, operationId: o.operationId, round: o.round };
  if (Object.keys(o.answers).length) r.answers = o.answers;
  if (o.declined) r.declined = o.declined;
  if (o.cancelled) r.cancelled = o.cancelled;
  if (o.inputRequired) r.inputRequired = o.inputRequired;
  return r;
}

test('Go host sealed, Node opens; Node sealed, Go opens: same outcomes', async () => {
  const [goAsk] = runGo({ keys, audience, ops: [{ op: 'ask', request: req, inputs }] });
  const nodeAsk = await node.ask(req, inputs);
  assert.deepEqual(goAsk.result.inputRequests, nodeAsk.inputRequests);
  const goState = goAsk.result.requestState;
  const nodeState = nodeAsk.requestState;
  const tampered = nodeState.slice(0, 30) + (nodeState[30] === 'A' ? 'B' : 'A') + nodeState.slice(31);

  const goResults = runGo({
    keys,
    audience,
    ops: [
      { op: 'resume', request: { ...req, requestState: nodeState, inputResponses: good } },
      { op: 'resume', request: { ...req, requestState: nodeState, inputResponses: bad } },
      { op: 'resume', request: { ...req, requestState: nodeState, inputResponses: { contact: { action: 'decline' } } } },
      { op: 'resume', request: { ...req, principal: 'mallory', requestState: nodeState } },
      { op: 'resume', request: { ...req, requestState: tampered } },
      { op: 'resume', request: { ...req, requestState: goState, inputResponses: good } },
    ],
  });
  // Node's answers to the same retries.
  const nodeGood = await node.resume({ ...req, requestState: nodeState, inputResponses: good });
  const nodeBad = await node.resume({ ...req, requestState: nodeState, inputResponses: bad });
  const nodeDecl = await node.resume({ ...req, requestState: nodeState, inputResponses: { contact: { action: 'decline' } } });
  const nodeOnGo = await node.resume({ ...req, requestState: goState, inputResponses: good });

  assert.deepEqual(goResults[0].outcome, plain(nodeGood));
  assert.equal(goResults[0].outcome.status, 'complete');
  assert.deepEqual(goResults[5].outcome, plain(nodeOnGo), 'Go-sealed state opens in Node');
  // A re-ask is sealed afresh (new nonce), so compare everything else.
  assert.equal(goResults[1].outcome.status, 'input_required');
  assert.equal(nodeBad.status, 'input_required');
  assert.deepEqual(goResults[1].outcome.inputRequired.inputRequests, nodeBad.inputRequired.inputRequests);
  assert.equal(goResults[1].outcome.round, nodeBad.round);
  assert.deepEqual(goResults[2].outcome, plain(nodeDecl));
  assert.deepEqual(goResults[3].error, { code: 'mrtr.state.invalid', message: 'invalid or expired requestState', reason: 'principal' });
  assert.deepEqual(goResults[4].error, { code: 'mrtr.state.invalid', message: 'invalid or expired requestState', reason: 'tampered' });
  const nodeTampered = await node.resume({ ...req, requestState: tampered }).catch((e) => e);
  assert.deepEqual(nodeTampered.toJSON(), goResults[4].error);

  // A Go re-ask continues in Node, and the reverse.
  const goReask = goResults[1].outcome.inputRequired.requestState;
  const fin = await node.resume({ ...req, requestState: goReask, inputResponses: { contact: good.contact } });
  assert.equal(fin.status, 'complete');
  assert.equal(fin.round, 2);
  const [goFin] = runGo({ keys, audience, ops: [{ op: 'resume', request: { ...req, requestState: nodeBad.inputRequired.requestState, inputResponses: { contact: good.contact } } }] });
  assert.equal(goFin.outcome.status, 'complete');
  assert.equal(goFin.outcome.operationId, nodeBad.operationId);
});

test('the same refusals for bad asks', async () => {
  const secret = [form('login', 'Sign in', { type: 'object', properties: { password: { type: 'string' } } })];
  const [goSecret, goCaps] = runGo({
    keys,
    audience,
    ops: [
      { op: 'ask', request: req, inputs: secret },
      { op: 'ask', request: { ...req, capabilities: {} }, inputs },
    ],
  });
  const nSecret = await node.ask(req, secret).catch((e) => e);
  const nCaps = await node.ask({ ...req, capabilities: {} }, inputs).catch((e) => e);
  assert.deepEqual(nSecret.toJSON(), goSecret.error);
  assert.deepEqual(nCaps.toJSON(), goCaps.error);
  assert.equal(nCaps.jsonRpcCode, -32021);
});
