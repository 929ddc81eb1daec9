// Times ask, resume and a tampered resume through guard.wasm (the package's WASI shim),
// and, in the same run, the TypeScript SDK's createRequestStateCodec
// mint + verify (HMAC-SHA256 only: no encryption, no schema check, no
// answer validation) as the peer figure.
//
//   node bench/guard.bench.mjs [iterations]     (default 5000, warm-up 2000)

import { createRequestStateCodec } from '@modelcontextprotocol/server';
import { createGuard, form, generateKey } from '../index.js';

const N = Number(process.argv[2] ?? process.env.BENCH_N ?? 5000);
const WARMUP = Math.max(500, Math.floor(N / 2.5));

const schema = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Your name', minLength: 1 },
    email: { type: 'string', title: 'Work email', format: 'email' },
  },
  required: ['name', 'email'],
};
const inputs = [form('contact', 'Who should we book the demo for?', schema)];
const req = {
  principal: 'ann@example.com',
  method: 'tools/call',
  target: 'book_demo_call',
  arguments: { topic: 'pricing' },
  capabilities: { elicitation: { form: {} } },
};
const answer = { contact: { action: 'accept', content: { name: 'Ann Lee', email: 'ann@example.com' } } };

const guard = await createGuard({ keys: generateKey(), audience: 'crm.example.com' });
const { requestState } = await guard.ask(req, inputs);
const tampered = requestState.slice(0, 40) + (requestState[40] === 'A' ? 'B' : 'A') + requestState.slice(41);
const resumeReq = { ...req, requestState, inputResponses: answer };
const tamperedReq = { ...req, requestState: tampered, inputResponses: answer };

// The peer: the SDK's codec, bound to method and principal as its docs
// suggest, carrying the same pending request.
const codec = createRequestStateCodec({ key: new Uint8Array(32).fill(7), ttlSeconds: 300, bind: (ctx) => `${ctx.mcpReq.method}\0${req.principal}` });
const ctx = { mcpReq: { method: 'tools/call' } };
const payload = { op: 'AAECAwQFBgcICQoLDA0ODw', rnd: 1, pend: { contact: { method: inputs[0].method, params: inputs[0].params } } };

const cases = {
  ask: () => guard.ask(req, inputs),
  resume: async () => {
    const o = await guard.resume(resumeReq);
    if (o.status !== 'complete') throw new Error('resume did not complete');
  },
  'tampered resume': async () => {
    try {
      await guard.resume(tamperedReq);
    } catch (e) {
      if (e.code === 'mrtr.state.invalid') return;
      throw e;
    }
    throw new Error('tampered state accepted');
  },
  'SDK codec mint+verify (peer)': async () => {
    const s = await codec.mint(payload, ctx);
    await codec.verify(s, ctx);
  },
};

async function time(fn) {
  for (let i = 0; i < WARMUP; i++) await fn();
  const t = new Float64Array(N);
  for (let i = 0; i < N; i++) {
    const a = performance.now();
    await fn();
    t[i] = performance.now() - a;
  }
  t.sort();
  return { median: t[Math.floor(N / 2)] * 1000, p99: t[Math.floor(N * 0.99)] * 1000 };
}

console.log(`node ${process.version}, guard.wasm through the WASI shim; ${N} iterations after ${WARMUP} warm-up`);
const r = {};
for (const [name, fn] of Object.entries(cases)) {
  r[name] = await time(fn);
  console.log(`${name.padEnd(30)} median ${r[name].median.toFixed(1).padStart(7)} µs   p99 ${r[name].p99.toFixed(1).padStart(7)} µs`);
}
const peer = r['SDK codec mint+verify (peer)'].median;
console.log(`peer / resume (median): ${(peer / r.resume.median).toFixed(2)}x   peer / (ask + resume): ${(peer / (r.ask.median + r.resume.median)).toFixed(2)}x`);
await guard.close();
