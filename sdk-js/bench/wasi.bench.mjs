// node:wasi against the package's WASI shim, in Node, on the same module:
// instance start-up (instantiate + the Go runtime's _initialize) and
// resume through the guard. Rounds alternate between the two layers so
// that machine load hits both alike.
//
//   node bench/wasi.bench.mjs [iterations per round] [rounds]   (default 3000, 4)

import { createGuardWith, form, generateKey, loadModule, platform } from '../index.js';
import { WasmInstance } from '../src/engine.js';
import { nodePlatform } from './node-wasi.mjs';

const N = Number(process.argv[2] ?? 3000);
const ROUNDS = Number(process.argv[3] ?? 4);
const schema = { type: 'object', properties: { name: { type: 'string', title: 'Your name', minLength: 1 }, email: { type: 'string', title: 'Work email', format: 'email' } }, required: ['name', 'email'] };
const req = { principal: 'ann@example.com', method: 'tools/call', target: 'book_demo_call', arguments: { topic: 'pricing' }, capabilities: { elicitation: { form: {} } } };
const answer = { contact: { action: 'accept', content: { name: 'Ann Lee', email: 'ann@example.com' } } };

await nodePlatform.init();
const module = await loadModule(new URL('../guard.wasm', import.meta.url));
const layers = [nodePlatform, platform];
const res = new Map(layers.map((p) => [p.name, { resume: [], start: [] }]));

const q = (a, f) => a[Math.min(a.length - 1, Math.floor(a.length * f))];
for (let round = 0; round < ROUNDS; round++) {
  for (const p of round % 2 ? [...layers].reverse() : layers) {
    const r = res.get(p.name);
    for (let i = 0; i < 10; i++) {
      const a = performance.now();
      await WasmInstance.create(module, p);
      r.start.push(performance.now() - a);
    }
    const g = await createGuardWith(p, module, { keys: generateKey(), audience: 'crm.example.com' });
    const { requestState } = await g.ask(req, [form('contact', 'Who should we book the demo for?', schema)]);
    const rr = { ...req, requestState, inputResponses: answer };
    for (let i = 0; i < Math.max(500, N / 3); i++) await g.resume(rr);
    for (let i = 0; i < N; i++) {
      const a = performance.now();
      const o = await g.resume(rr);
      r.resume.push(performance.now() - a);
      if (o.status !== 'complete') throw new Error('resume did not complete');
    }
    await g.close();
  }
}
console.log(`node ${process.version}; ${ROUNDS} alternating rounds of ${N} resumes per layer`);
for (const [name, r] of res) {
  r.resume.sort((a, b) => a - b);
  r.start.sort((a, b) => a - b);
  console.log(
    `${name.padEnd(10)} resume median ${(q(r.resume, 0.5) * 1000).toFixed(1).padStart(6)} µs  p99 ${(q(r.resume, 0.99) * 1000).toFixed(1).padStart(7)} µs   instance start median ${q(r.start, 0.5).toFixed(1)} ms`,
  );
}
const [a, b] = layers.map((p) => q(res.get(p.name).resume, 0.5));
console.log(`shim / node:wasi (resume median): ${(b / a).toFixed(3)}`);
