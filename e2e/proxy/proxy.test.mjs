// `mrtr-wasm proxy` in front of unguarded-server.ts (@modelcontextprotocol/
// server 2.4.0, guarding nothing): a two-round flow completes; forged,
// tampered, cross-principal and changed-argument retries get -32602 and
// never reach the server; invalid answers are asked again by the proxy
// without reaching it; 50 concurrent replays of the final retry book once.
// Each runs twice: the server as a Streamable HTTP upstream, and as a stdio
// child of the proxy. Run: node --test e2e/proxy/*.test.mjs (test.sh does).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const work = mkdtempSync(join(tmpdir(), 'mrtr-proxy-ts-'));
const procs = [];
let bin;
// What reached the upstream's tool handlers.
const toolCalls = (st) => st.calls;

const tokens = { 'alice-token-0123456789': 'alice', 'bob-token-0123456789ab': 'bob' };

function start(cmd, args, pattern) {
  const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  procs.push(p);
  let out = '';
  return new Promise((resolve, reject) => {
    const onData = (d) => {
      out += d;
      const m = out.match(pattern);
      if (m) resolve(m[1]);
    };
    p.stdout.on('data', onData);
    p.stderr.on('data', onData);
    p.on('exit', (code) => reject(new Error(`${cmd} exited ${code}:\n${out}`)));
    setTimeout(() => reject(new Error(`${cmd} did not start:\n${out}`)), 120_000).unref();
  });
}

before(() => {
  bin = process.env.MRTR_WASM_BIN ?? join(work, 'mrtr-wasm');
  if (!process.env.MRTR_WASM_BIN) execFileSync('go', ['build', '-o', bin, './cmd/mrtr-wasm'], { cwd: root, stdio: 'inherit' });
  writeFileSync(join(work, 'keys'), execFileSync(bin, ['keygen']), { mode: 0o600 });
  writeFileSync(join(work, 'tokens.json'), JSON.stringify(tokens), { mode: 0o600 });
});

after(() => {
  for (const p of procs) p.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
});

// startProxy starts the server (HTTP or stdio) behind a proxy and returns
// the proxy's URL and a reader of the server's stats.
async function startProxy(transport) {
  const common = ['proxy', '--addr', '127.0.0.1:0', '--keys', join(work, 'keys'), '--auth-tokens', join(work, 'tokens.json'),
    '--wasm-cache', process.env.MRTR_WASM_CACHE ?? join(root, '.cache', 'wasm')];
  const server = join(here, 'unguarded-server.ts');
  if (transport === 'http') {
    const upPort = await start(process.execPath, [server, '0'], /listening (\d+)/);
    const upURL = `http://127.0.0.1:${upPort}`;
    const addr = await start(bin, [...common, '--upstream', `${upURL}/mcp`, '--forward-principal', 'X-Principal'], /"mcp":"http:\/\/(127\.0\.0\.1:\d+)\/mcp"/);
    return { url: `http://${addr}`, stats: async () => (await fetch(`${upURL}/stats`)).json() };
  }
  const file = join(work, 'stdio-stats.json');
  writeFileSync(file, JSON.stringify({ seen: [], calls: [], bookings: [] }));
  const addr = await start(bin, [...common, '--upstream-env', `STATS_FILE=${file}`, '--', process.execPath, server, '--stdio'],
    /"mcp":"http:\/\/(127\.0\.0\.1:\d+)\/mcp"/);
  return { url: `http://${addr}`, stats: async () => JSON.parse(readFileSync(file, 'utf8')) };
}

const caps = { elicitation: { form: {} } };
let nextId = 1;
let pxURL, stats, transport;
async function call(name, args, extra = {}, token = 'alice-token-0123456789') {
  const id = nextId++;
  const body = { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': caps }, ...extra } };
  const r = await fetch(`${pxURL}/mcp`, { method: 'POST', body: JSON.stringify(body), headers: {
    'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`,
    'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name } });
  const text = await r.text();
  const json = text.startsWith('{') ? text : text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).pop();
  const msg = JSON.parse(json);
  assert.equal(msg.id, id);
  return msg;
}

const contact = { contact: { action: 'accept', content: { name: 'Ann Lee', email: 'ann@example.com' } } };
const confirm = { confirm: { action: 'accept', content: { ok: true } } };

async function toConfirm(topic) {
  const r1 = await call('book_demo', { topic });
  assert.equal(r1.result.resultType, 'input_required');
  assert.match(r1.result.requestState, /^v4\.local\./, 'the client sees only the sealed state');
  const r2 = await call('book_demo', { topic }, { inputResponses: contact, requestState: r1.result.requestState });
  assert.equal(r2.result.resultType, 'input_required', JSON.stringify(r2));
  assert.ok(r2.result.inputRequests.confirm);
  return r2.result.requestState;
}

for (const tr of ['http', 'stdio']) {
describe(`upstream over ${tr}`, () => {
  before(async () => {
    transport = tr;
    ({ url: pxURL, stats } = await startProxy(tr));
  });

  test('a two-round flow completes through the proxy, with the upstream state restored', async () => {
    const s2 = await toConfirm('pricing');
    const done = await call('book_demo', { topic: 'pricing' }, { inputResponses: confirm, requestState: s2 });
    assert.match(done.result.content[0].text, /booked pricing for Ann Lee <ann@example.com>/);
    const st = await stats();
    assert.ok(st.calls.some((s) => s.requestState === 'step=2;name=Ann Lee;email=ann@example.com'), 'the upstream got its own state back');
    assert.ok(st.calls.every((s) => !s.requestState.startsWith('v4.local.')), 'the upstream never sees the sealed state');
    if (transport === 'http') {
      assert.ok(st.seen.every((s) => s.principal === 'alice' || s.method !== 'tools/call'), '--forward-principal sends the principal');
    }
  });

  test('forged, tampered, cross-principal and changed-argument retries get -32602 and never reach the upstream', async () => {
    const s2 = await toConfirm('security');
    const before = toolCalls(await stats()).length;
    const mid = Math.floor(s2.length / 2);
    const tampered = s2.slice(0, mid) + (s2[mid] === 'A' ? 'B' : 'A') + s2.slice(mid + 1);
    const cases = [
      ['forged', () => call('book_demo', { topic: 'security' }, { inputResponses: confirm, requestState: 'step=2;name=Mallory;email=m@evil.example' })],
      ['tampered', () => call('book_demo', { topic: 'security' }, { inputResponses: confirm, requestState: tampered })],
      ['cross-principal', () => call('book_demo', { topic: 'security' }, { inputResponses: confirm, requestState: s2 }, 'bob-token-0123456789ab')],
      ['changed arguments', () => call('book_demo', { topic: 'refunds' }, { inputResponses: confirm, requestState: s2 })],
    ];
    for (const [what, f] of cases) {
      const r = await f();
      assert.equal(r.error?.code, -32602, `${what}: ${JSON.stringify(r)}`);
      assert.equal(r.error.message, 'invalid or expired requestState', what);
    }
    const st = await stats();
    assert.equal(toolCalls(st).length, before, 'none of them reached the upstream');
  });

  test('an invalid answer is asked again by the proxy without reaching the upstream', async () => {
    const r1 = await call('book_demo', { topic: 'api' });
    const before = toolCalls(await stats()).length;
    const bad = await call('book_demo', { topic: 'api' }, { inputResponses: { contact: { action: 'accept', content: { name: 'Ann', email: 'not-an-email' } } }, requestState: r1.result.requestState });
    assert.equal(bad.result.resultType, 'input_required');
    const msg = bad.result.inputRequests.contact.params.message;
    assert.match(msg, /Work email/, 'the re-ask names the field');
    assert.equal(bad.result.inputRequests.contact.params.requestedSchema.properties.name.default, 'Ann', 'the valid answer is kept as a default');
    const none = await call('book_demo', { topic: 'api' }, { requestState: r1.result.requestState });
    assert.equal(none.result.resultType, 'input_required', 'no answer: asked again');
    assert.equal(toolCalls(await stats()).length, before, 'the upstream saw none of it');
    const good = await call('book_demo', { topic: 'api' }, { inputResponses: contact, requestState: bad.result.requestState });
    assert.ok(good.result.inputRequests.confirm, 'the corrected answer reaches the upstream');
  });

  test('50 concurrent replays of the final retry book once and all get the result', async () => {
    const s2 = await toConfirm('replays');
    const booked = (await stats()).bookings.length;
    const rs = await Promise.all(Array.from({ length: 50 }, () => call('book_demo', { topic: 'replays' }, { inputResponses: confirm, requestState: s2 })));
    const texts = new Set(rs.map((r) => r.result?.content?.[0]?.text ?? JSON.stringify(r)));
    assert.equal(texts.size, 1, [...texts].join('\n'));
    assert.match([...texts][0], /booked replays for Ann Lee/);
    const st = await stats();
    assert.equal(st.bookings.length, booked + 1, 'one side effect');
    const finals = toolCalls(st).filter((s) => s.requestState === 'step=2;name=Ann Lee;email=ann@example.com' && JSON.stringify(s.inputResponses).includes('"ok":true'));
    assert.equal(finals.length, 2, 'the upstream got the final round once in this test (and once in the first test)');
  });

  test('a form that asks for a password never reaches the user: a tool error names the field and the rule', async () => {
    const r = await call('ask_password', {});
    assert.equal(r.result.isError, true, JSON.stringify(r));
    const text = r.result.content[0].text;
    assert.match(text, /login\.password/);
    assert.match(text, /URL mode/);
    assert.ok(!('inputRequests' in r.result));
  });

  test('plain calls pass through untouched', async () => {
    const r = await call('echo', { text: 'héllo' });
    assert.equal(r.result.content[0].text, 'héllo');
  });
});
}

describe('mrtr-wasm proxy --stdio (a local client runs the proxy as its stdio server)', () => {
  let send;
  before(async () => {
    const p = spawn(bin, ['proxy', '--stdio', '--addr', '127.0.0.1:0', '--keys', join(work, 'keys'), '--log-level', 'warn',
      '--wasm-cache', process.env.MRTR_WASM_CACHE ?? join(root, '.cache', 'wasm'), '--', process.execPath, join(here, 'unguarded-server.ts'), '--stdio'],
    { stdio: ['pipe', 'pipe', 'ignore'] });
    procs.push(p);
    const waiting = new Map();
    let buf = '';
    p.stdout.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        const msg = JSON.parse(line);
        waiting.get(msg.id)?.(msg);
      }
    });
    send = (name, args, extra = {}) => new Promise((resolve) => {
      const id = nextId++;
      waiting.set(id, resolve);
      p.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': caps }, ...extra } }) + '\n');
    });
  });

  test('a two-round flow completes; a forged state is refused', async () => {
    const r1 = await send('book_demo', { topic: 'stdio' });
    assert.match(r1.result.requestState, /^v4\.local\./);
    const r2 = await send('book_demo', { topic: 'stdio' }, { inputResponses: contact, requestState: r1.result.requestState });
    assert.ok(r2.result.inputRequests.confirm, JSON.stringify(r2));
    const forged = await send('book_demo', { topic: 'stdio' }, { inputResponses: confirm, requestState: 'step=2;name=Mallory;email=m@evil.example' });
    assert.equal(forged.error?.code, -32602);
    const done = await send('book_demo', { topic: 'stdio' }, { inputResponses: confirm, requestState: r2.result.requestState });
    assert.match(done.result.content[0].text, /booked stdio for Ann Lee/);
  });
});
