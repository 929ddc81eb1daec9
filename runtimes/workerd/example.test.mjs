// The Cloudflare Worker example (sdk-js/examples/worker) end to end: bundled
// as wrangler would (esbuild, the "workerd" export condition, *.wasm left
// as compiled-module imports), served by `workerd serve` on a random
// loopback port, and driven by the official MCP client over HTTP: a first
// call gets input_required, a wrong answer is asked again, a valid retry
// books, a replayed retry does not book twice, a tampered state is -32602.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { generateKey } from 'mrtr-wasm';

const runtimes = fileURLToPath(new URL('..', import.meta.url));
const example = fileURLToPath(new URL('../../sdk-js/examples/worker/worker.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'mrtr-worker-'));
let workerd;
after(() => {
  workerd?.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

// Bare imports resolve from runtimes/node_modules (where run.sh installed
// the package, the SDK and its dependencies); guard.wasm stays an import.
const resolveHere = {
  name: 'resolve-from-runtimes',
  setup(b) {
    b.onResolve({ filter: /^mrtr-wasm\/guard\.wasm$/ }, (a) => ({ path: a.path, external: true }));
    b.onResolve({ filter: /^(node:|@open-policy-agent\/opa-wasm$)/ }, (a) => ({ path: a.path, external: true }));
    b.onResolve({ filter: /^[^./]/ }, async (a) => {
      if (a.pluginData === 'here') return undefined;
      return b.resolve(a.path, { kind: a.kind, resolveDir: runtimes, pluginData: 'here' });
    });
  },
};
const bundle = join(dir, 'worker.js');
const r = await build({
  entryPoints: [example],
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  conditions: ['workerd', 'worker', 'browser'],
  mainFields: ['module', 'main'],
  outfile: bundle,
  plugins: [resolveHere],
  logLevel: 'warning',
  metafile: true,
});
const inputs = Object.keys(r.metafile.inputs);
console.log(`bundled ${inputs.length} files (${inputs.filter((f) => f.includes('@modelcontextprotocol')).length} from the MCP SDK) into ${bundle}`);

const port = await new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = s.address().port;
    s.close(() => resolve(p));
  });
});
const keys = generateKey();
const rel = (f) => JSON.stringify(relative(dir, f));
writeFileSync(
  join(dir, 'config.capnp'),
  `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "book-demo", worker = .bookDemo) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "book-demo") ],
);
const bookDemo :Workerd.Worker = (
  modules = [
    (name = "worker.js", esModule = embed "worker.js"),
    (name = "mrtr-wasm/guard.wasm", wasm = embed ${rel(join(runtimes, 'node_modules', 'mrtr-wasm', 'guard.wasm'))}),
  ],
  bindings = [
    (name = "MRTR_KEYS", text = ${JSON.stringify(keys)}),
    (name = "MCP_TOKENS", json = ${JSON.stringify(JSON.stringify({ 'tok-ann': 'ann', 'tok-bob': 'bob' }))}),
    (name = "MCP_AUDIENCE", text = "book-demo.example"),
  ],
  compatibilityDate = "2026-11-01",
);
`,
);
const logs = [];
workerd = spawn(join(runtimes, 'node_modules', '.bin', 'workerd'), ['serve', join(dir, 'config.capnp')], { stdio: ['ignore', 'pipe', 'pipe'] });
for (const s of [workerd.stdout, workerd.stderr]) s.on('data', (d) => logs.push(...String(d).split('\n').filter(Boolean)));
const url = new URL(`http://127.0.0.1:${port}/mcp`);
for (let i = 0; ; i++) {
  try {
    await fetch(url, { method: 'POST', body: '{}' });
    break;
  } catch {
    if (i > 300 || workerd.exitCode !== null) throw new Error(`workerd did not start: ${logs.join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function connect(token) {
  const client = new Client(
    { name: 'mrtr-wasm-worker-e2e', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: { form: {} } }, inputRequired: { autoFulfill: false } },
  );
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return client;
}
const call = (client, params) => client.callTool({ name: 'book_demo_call', arguments: { topic: 'pricing' }, ...params }, { allowInputRequired: true });
const textOf = (res) => res.content.map((c) => c.text).join('\n');
const ann = { action: 'accept', content: { name: 'Ann Lee', email: 'ann@example.com' } };

test('the worker: ask, re-ask, book once however often the retry is replayed, refuse a tampered state', async () => {
  const client = await connect('tok-ann');
  const tools = await client.listTools();
  assert.deepEqual(tools.tools.map((t) => t.name), ['book_demo_call']);

  const first = await call(client, {});
  assert.equal(first.resultType, 'input_required');
  assert.deepEqual(first.inputRequests.contact.params.requestedSchema.required, ['name', 'email']);
  const state = first.requestState;
  assert.match(state, /^v4\.local\./);

  const bad = await call(client, { requestState: state, inputResponses: { contact: { action: 'accept', content: { name: 'Ann Lee', email: 'ann-at-example' } } } });
  assert.equal(bad.resultType, 'input_required');
  assert.match(bad.inputRequests.contact.params.message, /email/);
  assert.equal(bad.inputRequests.contact.params.requestedSchema.properties.name.default, 'Ann Lee');

  const retry = { requestState: state, inputResponses: { contact: ann } };
  const booked = await call(client, retry);
  assert.ok(!booked.isError);
  assert.equal(textOf(booked), 'Booked demo call b-1 for Ann Lee <ann@example.com> about pricing.');
  assert.equal(booked._meta?.['mrtr-wasm/replay'], false);

  // Replayed, once and then 10 times at once: the same booking, never a second.
  const replay = await call(client, retry);
  assert.equal(textOf(replay), textOf(booked));
  assert.equal(replay._meta?.['mrtr-wasm/replay'], true);
  const many = await Promise.all(Array.from({ length: 10 }, () => call(client, retry)));
  for (const m of many) assert.equal(textOf(m), textOf(booked));

  // Decline on the same state books nothing.
  const declined = await call(client, { requestState: state, inputResponses: { contact: { action: 'decline' } } });
  assert.match(textOf(declined), /Nothing was booked/);

  // A new logical request books b-2: the replays above booked nothing.
  const second = await call(client, { arguments: { topic: 'security' } });
  const b2 = await call(client, { arguments: { topic: 'security' }, requestState: second.requestState, inputResponses: { contact: ann } });
  assert.equal(textOf(b2), 'Booked demo call b-2 for Ann Lee <ann@example.com> about security.');

  // Tampered state, another principal, changed arguments: -32602.
  const t = state.slice(0, 40) + (state[40] === 'A' ? 'B' : 'A') + state.slice(41);
  const bob = await connect('tok-bob');
  for (const [c, params] of [
    [client, { ...retry, requestState: t }],
    [bob, retry],
    [client, { ...retry, arguments: { topic: 'refunds' } }],
  ]) {
    await assert.rejects(call(c, params), (e) => {
      assert.equal(e.code, -32602, e.message);
      assert.match(e.message, /invalid or expired requestState/);
      return true;
    });
  }
  const reasons = logs.filter((l) => l.includes('guard.refused')).map((l) => JSON.parse(l.slice(l.indexOf('{'))).reason);
  assert.deepEqual(reasons.slice(-3), ['tampered', 'principal', 'arguments'], 'the reasons reach the log');
  assert.ok(!logs.some((l) => l.includes(state.slice(10, 60)) || l.includes('ann@example.com')), 'no state or answer in the log');
  await client.close();
  await bob.close();
});

test('the worker: no token, no service; a client without elicitation gets -32021', async () => {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  assert.equal(res.status, 401);
  const client = new Client({ name: 'no-elicitation', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: 'Bearer tok-ann' } } }));
  await assert.rejects(client.callTool({ name: 'book_demo_call', arguments: {} }), (e) => e.code === -32021);
  await client.close();
});
