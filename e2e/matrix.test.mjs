// The client matrix (issue 32): the official MCP clients, on both
// transports, through every path, each doing what a user does: list the
// tools, call a plain tool, and complete a call that needs input,
// answering the form through the client's own handler. Clients: the
// TypeScript SDK 2.4.0 (@modelcontextprotocol/client, 2026-07-28) with
// auto-fulfil and in manual mode, the TypeScript SDK 1.32.2
// (@modelcontextprotocol/sdk, 2025-11-25), and the go-sdk 1.8.0 client in
// both eras (e2e/goclient). Paths: serve; the proxy in front of servers of
// 2026-07-28 (the go-sdk conformance fixture, a TS SDK 2.4.0 server) and of
// the 2025 era (server-everything, server-filesystem, a TS SDK 1.32.2
// server over HTTP). Every message serve or the proxy sends to a client
// passes a tap that validates it in the client's revision
// (matrix/wire-check.mjs); one invalid message fails the test. The matrix
// is written to MATRIX.md (MATRIX_OUT) as a Markdown table. Run by
// e2e/matrix.sh, which builds the binaries and sets MRTR_BIN, MRTR_FIXTURE
// and MRTR_GOCLIENT.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, readFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as Client2, StreamableHTTPClientTransport as HTTP2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as Stdio2 } from '@modelcontextprotocol/client/stdio';
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HTTP1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport as Stdio1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { httpTap, check } from './matrix/wire-check.mjs';

const { MRTR_BIN: BIN, MRTR_FIXTURE: FIXTURE, MRTR_GOCLIENT: GOCLIENT } = process.env;
const here = dirname(fileURLToPath(import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'mrtr-matrix-'));
const cache = process.env.MRTR_WASM_CACHE || join(work, 'cache');
const node = process.execPath;
const mods = join(here, 'node_modules/@modelcontextprotocol');
const tapScript = join(here, 'matrix/stdio-tap.mjs');
const procs = [];
const taps = [];
const keys = execFileSync(BIN, ['keygen']).toString().trim();
const env = { ...process.env, MRTR_KEYS: keys };
const run = promisify(execFile);

// start runs a process until the tests end and resolves to the first
// match of re in its output.
async function start(cmd, args, re) {
  let out = '';
  const p = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  p.stdout.on('data', (d) => { out += d; });
  p.stderr.on('data', (d) => { out += d; });
  procs.push(p);
  if (!re) return null;
  for (let i = 0; i < 1200 && p.exitCode === null; i++) {
    const m = out.match(re);
    if (m) return m;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${cmd} ${args.join(' ')} did not start:\n${out}`);
}
const listening = /msg=listening mcp=(http:\/\/127\.0\.0\.1:\d+\/mcp)/;
const common = ['--addr', '127.0.0.1:0', '--log-format', 'text', '--wasm-cache', cache];
const startProxy = async (args) => (await start(BIN, ['proxy', ...common, ...args], listening))[1];
const freePort = () => new Promise((res) => { const s = createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });

const root = join(work, 'files');
const everything = [node, join(mods, 'server-everything/dist/index.js'), 'stdio'];
const filesystem = [node, join(mods, 'server-filesystem/dist/index.js'), root];
const up = {}; // the upstreams' URLs

// The paths. http() is the Streamable HTTP front door, stdio(n) the
// command a stdio client spawns (n: a fresh data directory for serve).
const PATHS = [
  { name: '`serve`', plain: ['list_bookings', {}, /booking/], input: ['book_demo_call', { topic: 'matrix' }, /Booked/],
    stdio: (n) => [BIN, 'serve', '--stdio', ...common, '--data', join(work, `serve-${n}`)] },
  { name: 'proxy → go-sdk fixture (2026-07-28, HTTP)', plain: ['test_simple_text', {}, /simple text response/],
    input: ['test_input_required_result_elicitation', {}, /Hello, Ann Lee!/], stdio: () => [BIN, 'proxy', '--stdio', ...common, '--upstream', up.fixture] },
  { name: 'proxy → TS SDK 2.4.0 server (2026-07-28, HTTP)', plain: ['echo', { text: 'hi there' }, /hi there/],
    input: ['book_demo', { topic: 'matrix' }, /booked matrix for Ann Lee <ann@example.com>/], stdio: () => [BIN, 'proxy', '--stdio', ...common, '--upstream', up.ts2] },
  { name: 'proxy → server-everything (2025-11-25, stdio)', plain: ['echo', { message: 'hi there' }, /hi there/],
    input: ['trigger-elicitation-request', {}, /Ann Lee/], stdio: () => [BIN, 'proxy', '--stdio', ...common, '--', ...everything] },
  { name: 'proxy → server-filesystem (2025-11-25, stdio)', plain: ['list_allowed_directories', {}, /files/],
    input: null, stdio: () => [BIN, 'proxy', '--stdio', ...common, '--', ...filesystem] },
  { name: 'proxy → TS SDK 1.32.2 server (2025-11-25, HTTP)', plain: ['echo', { text: 'hi there' }, /hi there/],
    input: ['ask_name', {}, /Hello, Ann Lee!/], stdio: () => [BIN, 'proxy', '--stdio', ...common, '--upstream', up.ts1] },
];

before(async () => {
  assert.ok(BIN && FIXTURE && GOCLIENT, 'set MRTR_BIN, MRTR_FIXTURE and MRTR_GOCLIENT (e2e/matrix.sh does)');
  mkdirSync(root);
  writeFileSync(join(root, 'note.txt'), 'hello\n');
  const fixturePort = await freePort();
  const [serveURL, , ts2, ts1] = await Promise.all([
    start(BIN, ['serve', ...common, '--data', join(work, 'serve')], listening).then((m) => m[1]),
    start(FIXTURE, ['-http', `127.0.0.1:${fixturePort}`], null).then(() => { up.fixture = `http://127.0.0.1:${fixturePort}/mcp`; }),
    start(node, [join(here, 'proxy/unguarded-server.ts'), '0'], /listening (\d+)/),
    start(node, [join(here, 'matrix/legacy-http-server.mjs'), '0'], /listening (\d+)/),
  ]);
  up.ts2 = `http://127.0.0.1:${ts2[1]}/mcp`;
  up.ts1 = `http://127.0.0.1:${ts1[1]}/mcp`;
  await waitHTTP(up.fixture);
  const fronts = await Promise.all([serveURL, startProxy(['--upstream', up.fixture]), startProxy(['--upstream', up.ts2]),
    startProxy(['--', ...everything]), startProxy(['--', ...filesystem]), startProxy(['--upstream', up.ts1])]);
  for (const [i, url] of fronts.entries()) {
    const tap = await httpTap(url);
    taps.push(tap);
    PATHS[i].http = tap.url;
    PATHS[i].tap = tap;
  }
});

async function waitHTTP(url) {
  for (let i = 0; i < 600; i++) {
    try { await fetch(url); return; } catch { await new Promise((r) => setTimeout(r, 100)); }
  }
  throw new Error(`${url} did not answer`);
}

// fill answers a form as a person would (the same rule as e2e/goclient).
function fill(schema) {
  const out = {};
  for (const [name, p] of Object.entries(schema?.properties ?? {})) {
    if (p.oneOf?.length) out[name] = p.oneOf[0].const;
    else if (p.enum?.length) out[name] = p.enum[0];
    else if (p.type === 'boolean') out[name] = true;
    else if (p.type === 'integer' || p.type === 'number') out[name] = Math.max(42, p.minimum ?? 0);
    else if (p.type === 'array') out[name] = [p.items?.enum?.[0] ?? p.items?.anyOf?.[0]?.const];
    else if (p.format === 'email') out[name] = 'ann@example.com';
    else if (p.format === 'uri') out[name] = 'https://example.com/ann';
    else if (p.format === 'date') out[name] = '2026-12-24';
    else if (p.format === 'date-time') out[name] = '2026-12-24T10:00:00Z';
    else out[name] = 'Ann Lee';
  }
  return out;
}
const answer = (params) => ({ action: 'accept', content: fill(params.requestedSchema) });
const text = (r) => [...(r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text), JSON.stringify(r.structuredContent ?? '')].join('\n');

// tapped wraps a stdio command in the wire check; report collects what it found.
function tapped(cmd, report) {
  return { command: node, args: [tapScript, report, '--', ...cmd] };
}

// Each client does the cell's work and returns { tools, plain, input, asked }.
const CLIENTS = [
  { name: 'TS SDK 2.4.0 (auto-fulfil)', run: (t, path) => ts2(t, path, true) },
  { name: 'TS SDK 2.4.0 (manual)', run: (t, path) => ts2(t, path, false) },
  { name: 'TS SDK 1.32.2', run: ts1 },
  { name: 'go-sdk 1.8.0 (2026-07-28)', run: (t, path) => goClient(t, path, '2026-07-28') },
  { name: 'go-sdk 1.8.0 (2025-11-25)', run: (t, path) => goClient(t, path, '2025-11-25') },
];

async function ts2(t, path, auto) {
  const client = new Client2({ name: 'mrtr-wasm-matrix', version: '1' }, {
    versionNegotiation: { mode: { pin: '2026-07-28' } },
    capabilities: { elicitation: { form: {} } },
    inputRequired: { autoFulfill: auto },
  });
  let asked = 0;
  const handler = async (req) => { asked++; return answer(req.params); };
  client.setRequestHandler('elicitation/create', handler);
  await client.connect(t.http ? new HTTP2(new URL(t.http)) : new Stdio2({ ...t.stdio, env, stderr: 'ignore' }));
  try {
    const out = {};
    // Manual mode completes its input call before listTools: once the
    // tools are listed, the SDK 2.4.0 checks an input_required result
    // against the tool's outputSchema and refuses it for lacking
    // structuredContent (its bug: an input round has no structured
    // content; serve's book_demo_call has an outputSchema).
    if (!auto && path.input) out.input = text(await manual(client, path.input, handler));
    out.tools = (await client.listTools()).tools.map((x) => x.name);
    out.plain = text(await client.callTool({ name: path.plain[0], arguments: path.plain[1] }));
    if (auto && path.input) out.input = text(await client.callTool({ name: path.input[0], arguments: path.input[1] }));
    out.asked = asked;
    return out;
  } finally {
    await client.close();
  }
}

// manual answers each input round itself, through the same handler the
// client registered, and retries with the answers and the state as sent.
async function manual(client, [name, args], handler) {
  let params = { name, arguments: args };
  for (let round = 0; round < 10; round++) {
    const r = await client.callTool(params, { allowInputRequired: true });
    if (r.resultType !== 'input_required') return r;
    const inputResponses = {};
    for (const [k, req] of Object.entries(r.inputRequests ?? {})) {
      assert.equal(req.method, 'elicitation/create', `round ${round} asks ${req.method}`);
      inputResponses[k] = await handler(req);
    }
    params = { name, arguments: args, inputResponses, requestState: r.requestState };
  }
  throw new Error('more than 10 rounds');
}

async function ts1(t, path) {
  const client = new Client1({ name: 'mrtr-wasm-matrix', version: '1' }, { capabilities: { elicitation: { form: {} } } });
  let asked = 0;
  client.setRequestHandler(ElicitRequestSchema, async (req) => { asked++; return answer(req.params); });
  await client.connect(t.http ? new HTTP1(new URL(t.http)) : new Stdio1({ ...t.stdio, env, stderr: 'ignore' }));
  try {
    const out = { tools: (await client.listTools()).tools.map((x) => x.name) };
    out.plain = text(await client.callTool({ name: path.plain[0], arguments: path.plain[1] }));
    if (path.input) out.input = text(await client.callTool({ name: path.input[0], arguments: path.input[1] }));
    out.asked = asked;
    return out;
  } finally {
    await client.close();
  }
}

async function goClient(t, path, era) {
  const args = ['-era', era, '-plain', path.plain[0], '-plain-args', JSON.stringify(path.plain[1])];
  if (path.input) args.push('-input', path.input[0], '-input-args', JSON.stringify(path.input[1]));
  if (t.http) args.push('-url', t.http);
  else args.push('--', t.stdio.command, ...t.stdio.args);
  try {
    const { stdout } = await run(GOCLIENT, args, { env, timeout: 200000 });
    const r = JSON.parse(stdout);
    assert.equal(r.protocol, era, 'the negotiated revision');
    return r;
  } catch (e) {
    throw new Error((e.stderr || e.message).trim());
  }
}

const results = {}; // row -> path name -> cell
let stdioChecked = 0; // messages the stdio taps checked

// The wire check refuses what each revision's client would: a guard
// that passes everything would make the matrix prove nothing.
test('the wire check refuses invalid messages in each revision', () => {
  const list = (result) => ({ jsonrpc: '2.0', id: 1, result });
  assert.equal(check('2026-07-28', list({ resultType: 'complete', ttlMs: 0, cacheScope: 'private', tools: [] }), 'tools/list'), null);
  assert.match(check('2026-07-28', list({ tools: [] }), 'tools/list'), /resultType/, 'no resultType, ttlMs, cacheScope');
  assert.match(check('2026-07-28', list({ resultType: 'complete', ttlMs: 0, cacheScope: '', tools: [] }), 'tools/list'), /ListToolsResult/);
  assert.match(check('2026-07-28', { jsonrpc: '2.0', id: 1, method: 'elicitation/create', params: {} }), /server-to-client request/);
  assert.equal(check('2025-11-25', list({ tools: [{ name: 'a', inputSchema: { type: 'object' } }] }), 'tools/list'), null);
  assert.match(check('2025-11-25', list({ tools: [{ name: 'a' }] }), 'tools/list'), /SDK 1\.32\.2/, 'a tool without inputSchema');
  assert.match(check('2025-11-25', list({ content: 'x' }), 'tools/call'), /SDK 1\.32\.2/);
});

let cellNo = 0;
// The cells run a few at a time: most of a stdio cell is waiting for the
// processes it spawns to start.
describe('the matrix', { concurrency: Number(process.env.MATRIX_CONCURRENCY || 2) }, () => {
for (const c of CLIENTS) {
  for (const transport of ['Streamable HTTP', 'stdio']) {
    const row = `${c.name} | ${transport}`;
    results[row] = {};
    for (const path of PATHS) {
      test(`${row} | ${path.name}`, { timeout: 240000 }, async () => {
        const n = ++cellNo;
        const report = join(work, `tap-${n}.jsonl`);
        const before = path.tap ? path.tap.failures.length : 0;
        const t = transport === 'stdio' ? { stdio: tapped(path.stdio(n), report) } : { http: path.http };
        try {
          const r = await c.run(t, path);
          assert.ok(r.tools.includes(path.plain[0]), `tools/list has ${path.plain[0]}: ${r.tools}`);
          assert.match(r.plain, path.plain[2]);
          if (path.input) {
            assert.ok(r.tools.includes(path.input[0]), `tools/list has ${path.input[0]}`);
            assert.match(r.input, path.input[2]);
            assert.ok(r.asked >= 1, 'the client was asked through its handler');
          }
          const bad = wireFailures(path, before, report);
          assert.deepEqual(bad, [], 'every message valid in the client\'s revision');
          results[row][path.name] = path.input ? '✅' : '✅ (no input call: it never asks)';
        } catch (e) {
          results[row][path.name] = '❌ ' + String(e.message).split('\n')[0].replace(/\|/g, '\\|').slice(0, 140);
          throw e;
        }
      });
    }
  }
}
});

// wireFailures are the messages the tap refused in this cell.
function wireFailures(path, before, report) {
  if (!existsSync(report)) return path.tap.failures.slice(before);
  const lines = readFileSync(report, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const done = lines.filter((l) => 'checked' in l);
  assert.ok(done.length === 0 || done[0].checked > 0, 'the stdio tap checked messages');
  for (const d of done) stdioChecked += d.checked;
  return lines.filter((l) => !('checked' in l));
}

test('the wire taps checked the HTTP front doors', () => {
  for (const [i, tap] of taps.entries()) assert.ok(tap.checked() > 0, `${PATHS[i].name}: no message checked`);
});

after(async () => {
  const head = `| client | transport | ${PATHS.map((p) => p.name).join(' | ')} |\n|---|---|${PATHS.map(() => '---|').join('')}\n`;
  const rows = Object.entries(results).map(([row, cells]) => `| ${row} | ${PATHS.map((p) => cells[p.name] ?? '(not run)').join(' | ')} |`).join('\n');
  const checked = taps.reduce((n, t) => n + t.checked(), 0) + stdioChecked;
  const doc = `<!-- generated by e2e/matrix.test.mjs (e2e/matrix.sh); do not edit -->\n` +
    `Each cell: tools/list, a plain tools/call, and a call that needs input answered through the client's own handler ` +
    `(elicitation/create; in manual mode the application answers each input_required round itself with that handler). ` +
    `On stdio the client spawns \`serve --stdio\` or \`proxy --stdio\` (with \`--upstream URL\` for an HTTP upstream). ` +
    `Every message serve or the proxy sent to the client (${checked} in this run) was checked in the client's revision: ` +
    `2026-07-28 against the official JSON schema, 2025-11-25 against the TS SDK 1.32.2's own schemas.\n\n${head}${rows}\n`;
  writeFileSync(process.env.MATRIX_OUT || join(here, 'MATRIX.md'), doc);
  for (const tap of taps) tap.close();
  for (const p of procs) p.kill();
  rmSync(work, { recursive: true, force: true });
});
