// Resume through guard.wasm, timed the same way in every runtime: the Go
// host's BenchmarkResume (host/bench_test.go) request, keys and audience,
// a warm-up, then n timed calls, each on its own, with performance.now().
// The warm-up is longer than the Go host's 3000 calls (enough for the guest
// heap to reach its limit): JavaScript engines compile the 6.9 MB module in
// tiers, and JavaScriptCore (Bun) needs about 10000 calls to reach its
// steady state on this machine; every JavaScript runtime gets the same.

export const WARM = 10000;
export const N = 10000;
export const BATCH = 1000;

const schema = {
  type: 'object',
  properties: { name: { type: 'string', title: 'Your name', minLength: 1 }, email: { type: 'string', title: 'Work email', format: 'email' } },
  required: ['name', 'email'],
};
const request = {
  principal: 'alice@example.com',
  method: 'tools/call',
  target: 'book_demo_call',
  arguments: { topic: 'pricing' },
  capabilities: { elicitation: { form: {}, url: {} } },
};
const answer = { contact: { action: 'accept', content: { name: 'Ann Lee', email: 'ann@example.com' } } };
const zeroKey = 'k4.local.' + 'A'.repeat(43);

// The smallest step performance.now() takes here (browsers coarsen it).
function clockStep() {
  let step = Infinity;
  for (let i = 0; i < 200; i++) {
    const a = performance.now();
    let b = performance.now();
    while (b === a) b = performance.now();
    step = Math.min(step, b - a);
  }
  return step * 1000;
}

/**
 * @param {object} api the mrtr-wasm module namespace
 * @param {WebAssembly.Module} module guard.wasm, compiled
 * @returns {Promise<{n: number, warm: number, medianUs: number, p99Us: number, meanUs: number, clockStepUs: number}>}
 */
export async function benchResume(api, module, { n = N, warm = WARM } = {}) {
  const g = await api.createGuard({ module, keys: zeroKey, audience: 'bench.example', poolSize: 1 });
  const ir = await g.ask(request, [api.form('contact', 'Who should we book the demo for?', schema)]);
  const req = { ...request, requestState: ir.requestState, inputResponses: answer };
  for (let i = 0; i < warm; i++) await g.resume(req);
  const t = new Float64Array(n);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const a = performance.now();
    const o = await g.resume(req);
    t[i] = performance.now() - a;
    if (o.status !== 'complete') throw new Error(`resume: ${o.status}`);
  }
  const total = performance.now() - t0;
  await g.close();
  // Where the clock is coarse (workerd: 1 ms), single calls cannot be
  // timed; consecutive intervals still add up to the elapsed time, so the
  // median of 1000-call batch means stands in for the median.
  const batches = [];
  for (let i = 0; i + BATCH <= n; i += BATCH) batches.push(t.subarray(i, i + BATCH).reduce((x, y) => x + y, 0) / BATCH);
  batches.sort((x, y) => x - y);
  t.sort();
  return {
    n,
    warm,
    medianUs: t[Math.floor(n / 2)] * 1000,
    p99Us: t[Math.floor(n * 0.99)] * 1000,
    meanUs: (total / n) * 1000,
    batchMedianUs: batches.length ? batches[Math.floor(batches.length / 2)] * 1000 : NaN,
    clockStepUs: clockStep(),
  };
}
