// Resume through guard.wasm in every runtime, one after the other in one
// run: Node, Deno, Bun, workerd (a local `workerd serve`, the loop inside
// one request), headless Chromium (a page, cross-origin isolated so that
// performance.now() steps by 5 µs), beside the Go host's BenchmarkResume
// (native and through wazero). Each JavaScript runtime runs the same code
// (shared/bench-core.mjs): 10000 warm-up calls, then N timed ones (the Go
// host warms 3000 calls: wazero compiles ahead of time).
//
// The machine is shared and noisy: the JavaScript runtimes run in ROUNDS
// interleaved rounds (node, deno, bun, workerd, chromium, node, …), and
// each figure is the median over the rounds, with the range of the
// per-round medians beside it.
//
//   node bench/bench.mjs [N] [ROUNDS]     (default 10000 3; run.sh's npm ci first)

import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir, cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveStatic } from '../shared/static-server.mjs';
import { launch } from '../shared/chromium.mjs';
import { WARM } from '../shared/bench-core.mjs';

const N = Number(process.argv[2] ?? 10000);
const ROUNDS = Number(process.argv[3] ?? 3);
const runtimes = fileURLToPath(new URL('..', import.meta.url));
const repo = join(runtimes, '..');
const bin = (x) => join(runtimes, 'node_modules', '.bin', x);
const tmp = mkdtempSync(join(tmpdir(), 'mrtr-bench-'));
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');
const results = [];

function run(cmd, args, opts = {}) {
  return execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 16 << 20, stdio: ['ignore', 'pipe', 'inherit'], ...opts });
}
const lastJSON = (out) => JSON.parse(out.trim().split('\n').pop());
async function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

const legs = {
  async node() {
    return lastJSON(run(process.execPath, ['bench/fs-run.mjs', N, WARM], { cwd: runtimes }));
  },
  async deno() {
    return lastJSON(run(bin('deno'), ['run', '--no-check', '--allow-read', '--allow-env', 'bench/fs-run.mjs', N, WARM], { cwd: runtimes, env: { ...process.env, NO_COLOR: '1' } }));
  },
  async bun() {
    return lastJSON(run(bin('bun'), ['bench/fs-run.mjs', N, WARM], { cwd: runtimes }));
  },
  async workerd() {
    const port = await freePort();
    const out = join(tmp, `workerd-${port}`);
    const bundle = join(tmp, 'policy-bundle.tar.gz');
    if (!existsSync(bundle)) run('go', ['run', './cmd/mrtr-wasm', 'policy', 'build', 'policies', '-o', bundle], { cwd: repo });
    const sha = run('sha256sum', [join(repo, 'wasm', 'guard.wasm')]).split(' ')[0];
    run(process.execPath, ['workerd/gen-config.mjs', out, bundle, sha, '--bench', String(port)], { cwd: runtimes });
    const w = spawn(bin('workerd'), ['serve', join(out, 'config.capnp')], { stdio: ['ignore', 'inherit', 'inherit'] });
    try {
      for (let i = 0; ; i++) {
        try {
          await fetch(`http://127.0.0.1:${port}/`);
          break;
        } catch {
          if (i > 300) throw new Error('workerd did not start');
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      const r = await (await fetch(`http://127.0.0.1:${port}/bench?n=${N}&warm=${WARM}`)).json();
      if (r.error) throw new Error(r.error);
      return r;
    } finally {
      w.kill('SIGTERM');
    }
  },
  async chromium() {
    // Cross-origin isolation: performance.now() steps by 5 µs, not 100 µs.
    const server = await serveStatic(repo, {}, { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' });
    const browser = await launch();
    try {
      await browser.page.goto(`${server.url}/runtimes/bench/page.html`);
      await browser.page.waitForFunction(() => window.ready === true);
      const r = await browser.page.evaluate(([n, warm]) => window.bench(n, warm), [N, WARM]);
      if (!r.crossOriginIsolated) throw new Error('the bench page is not cross-origin isolated');
      return { runtime: `Chromium ${browser.version} (V8, page main thread)`, ...r };
    } finally {
      await browser.close();
      await server.close();
    }
  },
  async go() {
    const out = run('go', ['test', './host', '-run', 'XXX', '-bench', 'BenchmarkResume$', '-benchtime', `${N}x`, '-count', '1'], { cwd: repo });
    const rows = [];
    for (const line of out.split('\n')) {
      const m = /^BenchmarkResume\/(\w+)-\d+\s+\d+\s+([\d.]+) ns\/op.*?([\d.]+) p50-µs\s+([\d.]+) p99-µs/.exec(line);
      if (m) rows.push({ runtime: `Go ${run('go', ['env', 'GOVERSION']).trim()} host, ${m[1] === 'wasm' ? 'guard.wasm through wazero' : 'native (no wasm)'}`, medianUs: +m[3], p99Us: +m[4], meanUs: +m[2] / 1000, kind: m[1] });
    }
    if (rows.length !== 2) throw new Error(`go bench output not understood:\n${out}`);
    return rows;
  },
};

console.log(`resume through guard.wasm: ${N} timed calls after ${WARM} warm-up, ${ROUNDS} interleaved rounds, one runtime at a time; ${cpus().length} cores (${cpus()[0]?.model})`);
console.log(`load average before: ${load()}`);
let failed = false;
const rounds = new Map();
const order = Object.keys(legs).filter((l) => l !== 'go');
for (let round = 0; round < ROUNDS; round++) {
  for (const name of order) {
    const l0 = load();
    try {
      const r = await legs[name]();
      if (!rounds.has(name)) rounds.set(name, []);
      rounds.get(name).push({ ...r, load: l0 });
      const m = r.clockStepUs > 50 ? `median n/a (1 ms clock; 1000-call batches ${r.batchMedianUs.toFixed(1)} µs)` : `median ${r.medianUs.toFixed(1)} µs`;
      console.log(`round ${round + 1} ${name}: ${m}, mean ${r.meanUs.toFixed(1)} µs (load ${l0})`);
    } catch (e) {
      failed = true;
      console.error(`${name}: FAILED: ${e.message}`);
    }
  }
}
const mid = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [leg, rs] of rounds) {
  const pick = (k) => mid(rs.map((r) => r[k]));
  results.push({
    leg,
    runtime: rs[0].runtime,
    load: rs[0].load,
    medianUs: pick('medianUs'),
    p99Us: pick('p99Us'),
    meanUs: pick('meanUs'),
    batchMedianUs: pick('batchMedianUs'),
    clockStepUs: Math.min(...rs.map((r) => r.clockStepUs)),
    range: (k) => `${Math.min(...rs.map((r) => r[k])).toFixed(1)}–${Math.max(...rs.map((r) => r[k])).toFixed(1)}`,
  });
}
try {
  const l0 = load();
  for (const x of await legs.go()) results.push({ leg: 'go', load: l0, ...x });
  console.log(`go: done (load ${l0})`);
} catch (e) {
  failed = true;
  console.error(`go: FAILED: ${e.message}`);
}
console.log(`load average after: ${load()}`);
rmSync(tmp, { recursive: true, force: true });

// A clock that steps by more than 50 µs (workerd: 1 ms, its Spectre
// mitigation, locally too) cannot time one call: there the median and p99
// per call are not measurable, and the mean (total time / N) is the one
// figure every runtime measures the same way. The median of 1000-call
// batch means is shown beside it.
const coarse = (r) => r.clockStepUs > 50;
const js = results.filter((r) => r.leg !== 'go');
const fine = js.filter((r) => !coarse(r));
const fastest = Math.min(...fine.map((r) => r.medianUs));
const fastestMean = Math.min(...js.map((r) => r.meanUs));
const f = (x) => x.toFixed(1);
console.log('\n| runtime | median µs | p99 µs | mean µs | median ÷ fastest JS | mean ÷ fastest JS | medians over the rounds µs |');
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (const r of results) {
  const median = coarse(r) ? `n/a ¹ (${f(r.batchMedianUs)})` : f(r.medianUs);
  const p99 = coarse(r) ? 'n/a ¹' : f(r.p99Us);
  const ratio = coarse(r) ? 'n/a' : `${(r.medianUs / fastest).toFixed(2)}×`;
  const spread = r.range ? (coarse(r) ? `${r.range('batchMedianUs')} ¹` : r.range('medianUs')) : '(one run)';
  console.log(`| ${r.runtime} | ${median} | ${p99} | ${f(r.meanUs)} | ${ratio} | ${(r.meanUs / fastestMean).toFixed(2)}× | ${spread} |`);
}
if (js.some(coarse)) {
  console.log('\n¹ performance.now() steps by 1 ms in workerd: one call cannot be timed. In brackets: the median of 1000-call batch means (includes the guest\'s GC, like a mean).');
}
const worst = Math.max(...fine.map((r) => r.medianUs)) / fastest;
const worstMean = Math.max(...js.map((r) => r.meanUs)) / fastestMean;
console.log(`slowest JavaScript runtime / fastest: median ${worst.toFixed(2)}× (${fine.map((r) => r.leg).join(', ')}), mean ${worstMean.toFixed(2)}× (all five) (aim: within 2×)`);
console.log(`performance.now() step: ${js.map((r) => `${r.leg} ${r.clockStepUs.toFixed(1)} µs`).join(', ')}`);
if (failed || js.length !== 5) process.exit(1);
