// Asks and resumes, each in a task of its own as a server's requests are,
// on two guards that alternate call by call: one collects the module's
// garbage between calls (the default), the other leaves the module to
// collect inside them (a test seam). guard.bench.mjs's loop never leaves
// its task, so no collection between calls can run there. Only the call
// is timed.
//
//   node bench/tasks.bench.mjs [iterations]     (Node; default 20000, warm-up 4000)

import { createGuard, form, generateKey } from '../index.js';
import { seams } from '../src/seams.js';

const N = Number(process.argv[2] ?? 20000);
const WARMUP = 4000;
const schema = { type: 'object', properties: { name: { type: 'string', minLength: 1 }, email: { type: 'string', format: 'email' } }, required: ['name', 'email'] };
const inputs = [form('contact', 'Who should we book the demo for?', schema)];
const req = { principal: 'ann@example.com', method: 'tools/call', target: 'book_demo_call', arguments: { topic: 'pricing' }, capabilities: { elicitation: { form: {} } } };
const answer = { contact: { action: 'accept', content: { name: 'Ann Lee', email: 'ann@example.com' } } };
// setImmediate: a new task without the 1 ms a timer waits, which would
// idle the CPU and time cold caches instead.
const tick = () => new Promise((r) => setImmediate(r));

const guards = {
  between: await createGuard({ keys: generateKey(), audience: 'crm.example.com' }),
  inside: await createGuard({ keys: generateKey(), audience: 'crm.example.com', [seams]: { collectBetweenCalls: false } }),
};
const fmt = (lat) => {
  lat.sort((a, b) => a - b);
  const q = (p) => (lat[Math.floor(p * (lat.length - 1))] * 1000).toFixed(1);
  const mean = ((lat.reduce((a, b) => a + b, 0) / lat.length) * 1000).toFixed(1);
  return `mean ${mean} p50 ${q(0.5)} p90 ${q(0.9)} p99 ${q(0.99)} µs`;
};
for (const op of ['ask', 'resume']) {
  const calls = {};
  for (const [name, g] of Object.entries(guards)) {
    const { requestState } = await g.ask(req, inputs);
    const resumeReq = { ...req, requestState, inputResponses: answer };
    calls[name] = op === 'ask' ? () => g.ask(req, inputs) : () => g.resume(resumeReq);
  }
  const lat = { between: [], inside: [] };
  for (let i = 0; i < N + WARMUP; i++) {
    for (const name of Object.keys(calls)) {
      await tick();
      const t0 = performance.now();
      await calls[name]();
      if (i >= WARMUP) lat[name].push(performance.now() - t0);
    }
  }
  for (const name of Object.keys(calls)) console.log(`${op}, ${name} calls: ${fmt(lat[name])}`);
}
for (const [name, g] of Object.entries(guards)) {
  const st = await g.stats();
  console.log(`${name}: the module collected ${st.numGC} times, ${st.collections} of them between calls`);
  await g.close();
}
