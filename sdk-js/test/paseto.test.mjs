// The sealed state is plain PASETO v4.local: an independent implementation
// (paseto-ts) opens what the guard seals, given the key and the implicit
// assertion of guest/ABI.md, and the guard opens what paseto-ts seals in
// our payload shape with our footer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { encrypt, decrypt } from 'paseto-ts/v4';
import { createGuard, form, generateKey, codes } from '../index.js';
import { baseRequest, contactSchema, canonicalJSON } from './helpers.mjs';

const key = generateKey();
const audience = 'crm.example.com';
const guard = await createGuard({ keys: key, audience });

// The implicit assertion: the bindings, keys in this order, strings
// escaped as RFC 8785 does (as JSON.stringify does), args = base64url
// SHA-256 of the RFC 8785 form of the arguments.
function implicit(req) {
  const args = createHash('sha256').update(canonicalJSON(req.arguments ?? {})).digest('base64url');
  return `{"args":${JSON.stringify(args)},"aud":${JSON.stringify(audience)},"ctx":"mrtr-wasm/state/v1","method":${JSON.stringify(req.method)},"principal":${JSON.stringify(req.principal)},"target":${JSON.stringify(req.target)}}`;
}

const rfc3339 = (ms) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

test('paseto-ts opens a state the guard sealed', async () => {
  const req = baseRequest({ principal: 'ann@example.com', arguments: { topic: 'pricing', n: 1.5, tags: ['a', 'é'] } });
  const { requestState } = await guard.ask(req, [form('contact', 'Who?', contactSchema)]);
  const { payload, footer } = decrypt(key, requestState, { assertion: implicit(req) });
  assert.deepEqual(footer, { kid: guard.keyIds[0] });
  assert.equal(payload.v, 1);
  assert.equal(payload.aud, audience);
  assert.equal(payload.sub, 'ann@example.com');
  assert.equal(payload.method, 'tools/call');
  assert.equal(payload.target, 'book_demo_call');
  assert.equal(payload.rnd, 1);
  assert.match(payload.iat, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.equal(Date.parse(payload.exp) - Date.parse(payload.iat), 300_000);
  assert.deepEqual(payload.pend.contact.params.requestedSchema, contactSchema);
  // Any other binding fails paseto-ts's own MAC check.
  assert.throws(() => decrypt(key, requestState, { assertion: implicit({ ...req, principal: 'mallory' }) }), /invalid authentication tag/);
  assert.throws(() => decrypt(generateKey(), requestState, { assertion: implicit(req) }), /invalid authentication tag/);
});

test('the guard opens a state paseto-ts sealed in our shape, and only with the right bindings', async () => {
  const req = baseRequest();
  const now = Date.now() - 1000;
  const contact = form('contact', 'Who should we book the demo for?', contactSchema);
  const payload = {
    v: 1,
    iat: rfc3339(now),
    exp: rfc3339(now + 300_000),
    aud: audience,
    sub: req.principal,
    method: req.method,
    target: req.target,
    args: createHash('sha256').update(canonicalJSON(req.arguments)).digest('base64url'),
    op: randomBytes(16).toString('base64url'),
    rnd: 1,
    pend: { contact: { method: contact.method, params: contact.params } },
  };
  const footer = JSON.stringify({ kid: guard.keyIds[0] });
  const token = encrypt(key, payload, { footer, assertion: implicit(req), addIat: false, addExp: false });
  const o = await guard.open(baseRequest({ requestState: token }));
  assert.equal(o.status, 'open');
  assert.equal(o.operationId, payload.op);
  assert.deepEqual(o.pending, ['contact']);
  const out = await guard.resume(baseRequest({ requestState: token, inputResponses: { contact: { action: 'accept', content: { name: 'Ann', email: 'ann@example.com' } } } }));
  assert.equal(out.status, 'complete');
  assert.equal(out.operationId, payload.op);
  // Sealed for another principal: the guard refuses it.
  const other = encrypt(key, { ...payload, sub: 'mallory' }, { footer, assertion: implicit({ ...req, principal: 'mallory' }), addIat: false, addExp: false });
  await assert.rejects(guard.open(baseRequest({ requestState: other })), (e) => e.code === codes.STATE_INVALID && e.reason === 'principal');
  // Expired in its own claims, though the MAC is fine.
  const old = encrypt(key, { ...payload, iat: rfc3339(now - 600_000), exp: rfc3339(now - 300_000) }, { footer, assertion: implicit(req), addIat: false, addExp: false, validatePayload: false });
  await assert.rejects(guard.open(baseRequest({ requestState: old })), (e) => e.code === codes.STATE_INVALID && e.reason === 'expired');
  // Another footer (no kid the guard knows): refused before any crypto.
  const noKid = encrypt(key, payload, { footer: '{"kid":"k4.lid.unknown"}', assertion: implicit(req), addIat: false, addExp: false });
  await assert.rejects(guard.open(baseRequest({ requestState: noKid })), (e) => e.code === codes.STATE_INVALID && e.reason === 'unknown_key');
});
