// Servers of the 2025-11-25 era behind `mrtr-wasm proxy`, as stdio
// children, with a 2026-07-28 client: the official server-everything and
// server-filesystem (2026.8.31, SDK 1.x). server-everything asks with a
// server-to-client elicitation/create in the middle of a call; the proxy
// turns it into a sealed input_required round. A client of the 2025-11-25
// era (SDK 1.32.2) behind the proxy sees their prompts, resources and
// completions, and hears their progress and log messages. With
// --upstream-roots, a roots/list during a call is a round (or is relayed to
// a legacy client); one outside any call is answered at once. Run by
// e2e/legacy.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, mkdirSync, rmSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:net';

const BIN = process.env.MRTR_BIN;
const ALICE = 'tok-alice-upstream-9d1c4e';
const BOB = 'tok-bob-upstream-3a7f20';
const here = dirname(fileURLToPath(import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'mrtr-legacy-up-'));
const procs = [];

// freePort is a loopback port the system just gave out and took back.
async function freePort() {
  const srv = createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

// startProxy runs the proxy on a port the system picks (read from its
// "listening" log line), so that parallel runs never collide.
async function startProxy(child, flags = []) {
  let logs = '';
  const upstreamArgs = child ? ['--', process.execPath, ...child] : [];
  const p = spawn(BIN, ['proxy', '--addr', '127.0.0.1:0', '--auth-tokens', join(work, 'tokens.json'),
    '--log-format', 'text', '--keys', join(work, 'keys'), ...flags, ...upstreamArgs], { stdio: ['ignore', 'ignore', 'pipe'] });
  p.stderr.on('data', (d) => { logs += d; });
  procs.push(p);
  for (let i = 0; i < 600 && p.exitCode === null && p.signalCode === null; i++) {
    const addr = logs.match(/msg=listening mcp=http:\/\/(127\.0\.0\.1:\d+)\/mcp/);
    if (addr) {
      const base = `http://${addr[1]}`;
      try { if ((await fetch(`${base}/healthz`)).ok) return { base, logs: () => logs }; } catch { /* not up yet */ }
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error('the proxy did not become healthy:\n' + logs);
}

let everything, everything2, filesystem, asker, rootsAsker, rootsEverything, overHTTP, root;
const askerLog = join(work, 'asker.log');
before(async () => {
  assert.ok(BIN, 'set MRTR_BIN to a built mrtr-wasm (e2e/legacy.sh does)');
  writeFileSync(join(work, 'tokens.json'), JSON.stringify({ [ALICE]: 'alice', [BOB]: 'bob' }), { mode: 0o600 });
  execFileSync(BIN, ['keygen', '-o', join(work, 'keys')]);
  root = join(work, 'root');
  mkdirSync(join(root, 'notes'), { recursive: true });
  writeFileSync(join(root, 'notes', 'hello.txt'), 'hello from the proxy test\n');
  everything = await startProxy([join(here, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'stdio']);
  everything2 = await startProxy([join(here, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'stdio']);
  filesystem = await startProxy([join(here, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js'), root]);
  process.env.LEGACY_SERVER_LOG = askerLog;
  asker = await startProxy([join(here, 'legacy-server.mjs')], ['--upstream-env-pass', 'LEGACY_SERVER_LOG']);
  rootsAsker = await startProxy([join(here, 'legacy-server.mjs')], ['--upstream-env-pass', 'LEGACY_SERVER_LOG', '--upstream-roots']);
  rootsEverything = await startProxy([join(here, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'stdio'], ['--upstream-roots']);
  // server-everything over Streamable HTTP: a legacy HTTP upstream.
  // It takes its port from PORT and cannot report one the system picked:
  // a port just freed, again if another process took it meanwhile.
  let uport;
  for (let attempt = 0; attempt < 5 && !uport; attempt++) {
    const port = await freePort();
    const up = spawn(process.execPath, [join(here, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'streamableHttp'],
      { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
    procs.push(up);
    for (let i = 0; i < 200 && up.exitCode === null; i++) {
      try { await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'GET' }); uport = port; break; } catch { await new Promise((r) => setTimeout(r, 100)); }
    }
  }
  assert.ok(uport, 'server-everything over HTTP did not start');
  overHTTP = await startProxy(null, ['--upstream', `http://127.0.0.1:${uport}/mcp`]);
});

after(async () => {
  for (const p of procs) {
    if (p.exitCode !== null || p.signalCode !== null) continue;
    p.kill('SIGTERM');
    await new Promise((r) => p.once('exit', r));
  }
  rmSync(work, { recursive: true, force: true });
});

let rpcID = 0;
async function rpc(base, token, method, params, name, caps = { elicitation: { form: {}, url: {} } }) {
  const body = {
    jsonrpc: '2.0', id: ++rpcID, method,
    params: {
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': caps,
      },
      ...params,
    },
  };
  const headers = {
    'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': method, Authorization: `Bearer ${token}`,
  };
  if (name) headers['Mcp-Name'] = name;
  const res = await fetch(`${base}/mcp`, { method: 'POST', headers, body: JSON.stringify(body) });
  let text = await res.text();
  if ((res.headers.get('content-type') || '').startsWith('text/event-stream')) {
    text = text.split('\n').filter((l) => l.startsWith('data: ')).pop().slice(6);
  }
  const m = JSON.parse(text);
  assert.equal(m.id, body.id, 'the answer carries the request id');
  return m;
}
const call = (base, token, name, extra = {}) => rpc(base, token, 'tools/call', { name, arguments: {}, ...extra }, name);

test('server-everything: its elicitation becomes a sealed round; wrong answers re-asked, forged ones refused', async () => {
  const tool = 'trigger-elicitation-request';
  const r1 = await call(everything.base, ALICE, tool);
  assert.equal(r1.result.resultType, 'input_required', JSON.stringify(r1));
  const ask = r1.result.inputRequests.elicitation;
  assert.equal(ask.method, 'elicitation/create');
  assert.match(ask.params.requestedSchema.properties.integer.description, /phone number, pin/,
    'the field that says "do not give us your pin" is not a secret-asking field and reaches the client');
  assert.match(r1.result.requestState, /^v4\.local\./, 'the client sees only the proxy\'s sealed state');

  // An out-of-range integer is asked again by the proxy, naming the field.
  const bad = { elicitation: { action: 'accept', content: { name: 'Ada', integer: 150 } } };
  const r2 = await call(everything.base, ALICE, tool, { requestState: r1.result.requestState, inputResponses: bad });
  assert.equal(r2.result.resultType, 'input_required');
  assert.match(r2.result.inputRequests.elicitation.params.message, /Integer/);

  // Tampered, or another principal's: -32602, and the round stays open.
  const s = r2.result.requestState;
  const mid = Math.floor(s.length / 2);
  const tampered = s.slice(0, mid) + (s[mid] === 'A' ? 'B' : 'A') + s.slice(mid + 1);
  const good = { elicitation: { action: 'accept', content: { name: 'Ada', integer: 7 } } };
  const t = await call(everything.base, ALICE, tool, { requestState: tampered, inputResponses: good });
  assert.equal(t.error?.code, -32602, JSON.stringify(t));
  const b = await call(everything.base, BOB, tool, { requestState: s, inputResponses: good });
  assert.equal(b.error?.code, -32602, JSON.stringify(b));

  // The valid answer reaches the upstream's open request and comes back in its result.
  const r3 = await call(everything.base, ALICE, tool, { requestState: s, inputResponses: good });
  assert.ok(r3.result, JSON.stringify(r3));
  const text = r3.result.content.map((c) => c.text).join('\n');
  assert.match(text, /Favorite Integer: 7/, text);
  assert.doesNotMatch(text, /150/, 'the rejected answer never reached the upstream');

  // Replaying the final retry returns the stored result; the upstream request is not answered twice.
  const r4 = await call(everything.base, ALICE, tool, { requestState: s, inputResponses: good });
  assert.deepEqual(r4.result, r3.result);
});

test('server-everything: its URL-mode elicitation works through the proxy', async () => {
  const tool = 'trigger-url-elicitation';
  const args = { url: 'https://example.com/connect/calendar' };
  const r1 = await call(everything.base, ALICE, tool, { arguments: args });
  assert.equal(r1.result.resultType, 'input_required', JSON.stringify(r1));
  const ask = r1.result.inputRequests.elicitation;
  assert.equal(ask.params.mode, 'url');
  const r2 = await call(everything.base, ALICE, tool, { arguments: args, requestState: r1.result.requestState, inputResponses: { elicitation: { action: 'accept' } } });
  assert.ok(r2.result && !r2.error, JSON.stringify(r2));
  assert.notEqual(r2.result.resultType, 'input_required');
});

test('server-everything: server/discover is answered from what it said at initialize', async () => {
  const d = await rpc(everything.base, ALICE, 'server/discover', {});
  // The proxy's versions: 2026-07-28, and the 2025 ones on sessions.
  assert.deepEqual(d.result.supportedVersions, ['2026-07-28', '2025-11-25', '2025-06-18'], JSON.stringify(d));
  assert.equal(d.result.resultType, 'complete');
  assert.ok(d.result.capabilities.tools, 'its tools capability');
  assert.equal(d.result.capabilities.logging, undefined, 'a 2025 server\'s logging cannot be carried');
  assert.equal(d.result._meta['io.modelcontextprotocol/serverInfo'].name, 'mcp-servers/everything');
  assert.equal(d.result._meta['mrtr-wasm/proxy'].upstreamProtocolVersion, '2025-11-25');
});

test('server-filesystem: its tools work through the proxy', async () => {
  const list = await rpc(filesystem.base, ALICE, 'tools/list', {});
  const names = list.result.tools.map((t) => t.name);
  assert.ok(names.includes('read_text_file') || names.includes('read_file'), names.join(','));
  const read = names.includes('read_text_file') ? 'read_text_file' : 'read_file';
  const r = await call(filesystem.base, ALICE, read, { arguments: { path: join(root, 'notes', 'hello.txt') } });
  assert.match(r.result.content[0].text, /hello from the proxy test/, JSON.stringify(r));
  const dir = await call(filesystem.base, ALICE, 'list_directory', { arguments: { path: join(root, 'notes') } });
  assert.match(dir.result.content[0].text, /hello\.txt/);
});

test('a legacy server that asks for a password in a form: declined upstream, the client told why', async () => {
  const r = await call(asker.base, ALICE, 'sign_in');
  assert.equal(r.result?.isError, true, JSON.stringify(r));
  const text = r.result.content[0].text;
  assert.match(text, /password/, 'the error names the field');
  assert.match(text, /URL mode/, 'and tells the author what to do');
  for (let i = 0; i < 100 && !(existsSync(askerLog) && readFileSync(askerLog, 'utf8')); i++) {
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.equal(readFileSync(askerLog, 'utf8'), 'decline\n', 'the upstream heard decline');
});

test('a 2025-11-25 client (SDK 1.32.2) meets server-everything through the proxy: relayed after the lint, answers checked first', async () => {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
  const client = new Client({ name: 'sdk-1.32.2-through-proxy', version: '1' }, { capabilities: { elicitation: { form: {} } } });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params.message);
    return { action: 'accept', content: { name: 'Ada', integer: asked.length === 1 ? 150 : 7 } };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${everything.base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${ALICE}` } },
  }));
  const r = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
  const text = r.content.map((c) => c.text).join('\n');
  assert.match(text, /Favorite Integer: 7/, text);
  assert.equal(asked.length, 2, 'asked twice: the out-of-range integer was asked again by the proxy');
  assert.match(asked[1], /integer/i);
  await client.close();
});

test('a legacy stdio server gets one child per principal', async () => {
  const pid = async (tok) => (await call(asker.base, tok, 'pid')).result.content[0].text;
  const a1 = await pid(ALICE);
  const b1 = await pid(BOB);
  const a2 = await pid(ALICE);
  assert.equal(a1, a2, 'alice keeps her child');
  assert.notEqual(a1, b1, 'bob never shares alice\'s child');
});

test('server-everything over Streamable HTTP (2025-11-25): detected, a session per principal, its elicitation a sealed round', async () => {
  assert.match(overHTTP.logs(), /answered the legacy initialize/);
  const tool = 'trigger-elicitation-request';
  for (const tok of [ALICE, BOB]) {
    const r1 = await call(overHTTP.base, tok, tool);
    assert.equal(r1.result?.resultType, 'input_required', JSON.stringify(r1));
    const bad = { elicitation: { action: 'accept', content: { name: 'Ada', integer: 0 } } };
    const r2 = await call(overHTTP.base, tok, tool, { requestState: r1.result.requestState, inputResponses: bad });
    assert.equal(r2.result.resultType, 'input_required', 'an out-of-range integer is asked again by the proxy');
    const good = { elicitation: { action: 'accept', content: { name: 'Ada', integer: 11 } } };
    const r3 = await call(overHTTP.base, tok, tool, { requestState: r2.result.requestState, inputResponses: good });
    assert.match(r3.result.content.map((c) => c.text).join('\n'), /Favorite Integer: 11/);
  }
});

test('a round of a legacy upstream opened on one proxy cannot be finished on another: call again', async () => {
  const tool = 'trigger-elicitation-request';
  const r1 = await call(everything.base, ALICE, tool);
  assert.equal(r1.result.resultType, 'input_required');
  const good = { elicitation: { action: 'accept', content: { name: 'Ada', integer: 5 } } };
  const r2 = await call(everything2.base, ALICE, tool, { requestState: r1.result.requestState, inputResponses: good });
  assert.equal(r2.error?.code, -32602, JSON.stringify(r2));
  assert.match(r2.error.message, /call the tool again/);
  // The first proxy still finishes it.
  const r3 = await call(everything.base, ALICE, tool, { requestState: r1.result.requestState, inputResponses: good });
  assert.match(r3.result.content.map((c) => c.text).join('\n'), /Favorite Integer: 5/);
});

test('server-everything: its sampling request becomes a sealed round; a client without sampling gets -32021', async () => {
  const tool = 'trigger-sampling-request';
  const args = { prompt: 'Say hello', maxTokens: 20 };
  const noSampling = await rpc(everything.base, ALICE, 'tools/call', { name: tool, arguments: args }, tool);
  assert.equal(noSampling.error?.code, -32021, JSON.stringify(noSampling));
  const caps = { sampling: {} };
  const r1 = await rpc(everything.base, ALICE, 'tools/call', { name: tool, arguments: args }, tool, caps);
  assert.equal(r1.result?.resultType, 'input_required', JSON.stringify(r1));
  assert.equal(r1.result.inputRequests.sampling.method, 'sampling/createMessage');
  const answer = { sampling: { role: 'assistant', content: { type: 'text', text: 'hello from the test model' }, model: 'test-model', stopReason: 'endTurn' } };
  const r2 = await rpc(everything.base, ALICE, 'tools/call', { name: tool, arguments: args, requestState: r1.result.requestState, inputResponses: answer }, tool, caps);
  assert.match(JSON.stringify(r2.result), /hello from the test model/, JSON.stringify(r2));
});

// A TS SDK 1.32.2 client (2025-11-25) connected through the proxy with token.
async function legacyClient(base, token, capabilities = {}) {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const client = new Client({ name: 'sdk-1.32.2-through-proxy', version: '1' }, { capabilities });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  }));
  return client;
}

test('a 2025-11-25 client (SDK 1.32.2) through the proxy lists and gets server-everything\'s prompts, reads its resources, completes', async () => {
  const client = await legacyClient(everything.base, ALICE);
  const caps = client.getServerCapabilities();
  assert.ok(caps.tools && caps.prompts && caps.resources && caps.completions, JSON.stringify(caps));
  assert.match(client.getInstructions() ?? '', /Everything Server/, 'the upstream\'s instructions');

  const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
  for (const name of ['simple-prompt', 'args-prompt', 'completable-prompt']) assert.ok(prompts.includes(name), prompts.join(','));
  const simple = await client.getPrompt({ name: 'simple-prompt' });
  assert.ok(simple.messages.length > 0, JSON.stringify(simple));
  const args = await client.getPrompt({ name: 'args-prompt', arguments: { city: 'Lisbon' } });
  assert.match(JSON.stringify(args.messages), /Lisbon/);

  const resources = (await client.listResources()).resources;
  assert.ok(resources.length > 0, 'server-everything lists resources');
  const first = await client.readResource({ uri: resources[0].uri });
  assert.equal(first.contents[0].uri, resources[0].uri, JSON.stringify(first).slice(0, 300));
  const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
  assert.ok(templates.includes('demo://resource/dynamic/text/{resourceId}'), templates.join(','));
  const dynamic = await client.readResource({ uri: 'demo://resource/dynamic/text/3' });
  assert.equal(dynamic.contents[0].uri, 'demo://resource/dynamic/text/3');
  assert.ok(dynamic.contents[0].text, JSON.stringify(dynamic));
  await assert.rejects(client.readResource({ uri: 'demo://resource/nothing/here' }), 'a URI the upstream does not know is its error');

  const completed = await client.complete({ ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'department', value: 'E' } });
  assert.deepEqual(completed.completion.values, ['Engineering']);
  await client.close();
});

test('progress and log messages of a legacy upstream reach a 1.32.2 client through the proxy', async () => {
  const { LoggingMessageNotificationSchema } = await import('@modelcontextprotocol/sdk/types.js');
  const client = await legacyClient(asker.base, ALICE);
  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs.push(`${n.params.level} ${n.params.data}`); });
  await client.setLoggingLevel('info');
  const progress = [];
  const r = await client.callTool({ name: 'work', arguments: {} }, undefined, { onprogress: (p) => progress.push(`${p.progress}/${p.total} ${p.message}`) });
  assert.equal(r.content[0].text, 'done');
  for (let i = 0; i < 50 && (progress.length < 1 || logs.length < 1); i++) await new Promise((res) => setTimeout(res, 100));
  assert.deepEqual(progress, ['1/2 halfway'], 'progress under the client\'s own token');
  assert.deepEqual(logs, ['warning working hard'], 'log messages at the level the client set');
  await client.close();
});

// Answers a 2026-07-28 tools/call's rounds of roots/list until it completes.
async function callAnsweringRoots(base, token, name, roots) {
  const caps = { roots: {} };
  let r = await rpc(base, token, 'tools/call', { name, arguments: {} }, name, caps);
  for (let round = 0; r.result?.resultType === 'input_required'; round++) {
    assert.ok(round < 4, 'still asking: ' + JSON.stringify(r));
    assert.equal(r.result.inputRequests.roots?.method, 'roots/list', JSON.stringify(r));
    r = await rpc(base, token, 'tools/call', { name, arguments: {}, requestState: r.result.requestState, inputResponses: { roots: { roots } } }, name, caps);
  }
  return r;
}

test('roots: off by default; with --upstream-roots a legacy server\'s roots/list mid-call is a round for a 2026-07-28 client', async () => {
  const off = await call(asker.base, ALICE, 'list_roots');
  assert.match(off.result.content[0].text, /^no roots: /, 'without --upstream-roots the server is not offered roots');

  const r = await callAnsweringRoots(rootsAsker.base, ALICE, 'list_roots', [{ uri: 'file:///srv/alice', name: 'alice' }]);
  assert.equal(r.result.content[0].text, 'roots: [{"uri":"file:///srv/alice","name":"alice"}]', JSON.stringify(r));

  // A client that declared no roots is not failed: the server hears it has none.
  const none = await call(rootsAsker.base, BOB, 'list_roots');
  assert.match(none.result?.content?.[0]?.text ?? '', /^no roots: .*declared no roots/, JSON.stringify(none));
});

test('roots: a 1.32.2 client with roots behind the proxy answers a legacy server\'s roots/list on its session', async () => {
  const { ListRootsRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
  const client = await legacyClient(rootsAsker.base, ALICE, { roots: { listChanged: false } });
  let asked = 0;
  client.setRequestHandler(ListRootsRequestSchema, async () => { asked++; return { roots: [{ uri: 'file:///srv/legacy', name: 'legacy' }] }; });
  const r = await client.callTool({ name: 'list_roots', arguments: {} });
  assert.equal(r.content[0].text, 'roots: [{"uri":"file:///srv/legacy","name":"legacy"}]', JSON.stringify(r));
  assert.equal(asked, 1);
  await client.close();
});

test('roots: server-everything\'s get-roots-list through the proxy; its roots/list outside any call is answered at once', async () => {
  const r = await callAnsweringRoots(rootsEverything.base, ALICE, 'get-roots-list', [{ uri: 'file:///srv/alice', name: 'alice' }]);
  assert.match(r.result.content[0].text, /file:\/\/\/srv\/alice/, JSON.stringify(r));

  // Bob's child starts with his first call, which ends at once; 350 ms after
  // initialized it asks roots/list with no call open: answered with an
  // error, nothing waits, and nobody else's call gets it.
  const before = (rootsEverything.logs().match(/outside a call; answered with an error/g) || []).length;
  const echo = await call(rootsEverything.base, BOB, 'echo', { arguments: { message: 'hi' } });
  assert.match(echo.result.content[0].text, /hi/, JSON.stringify(echo));
  for (let i = 0; i < 50 && (rootsEverything.logs().match(/outside a call; answered with an error/g) || []).length <= before; i++) {
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.ok((rootsEverything.logs().match(/outside a call; answered with an error/g) || []).length > before, rootsEverything.logs().slice(-2000));
  const again = await call(rootsEverything.base, BOB, 'echo', { arguments: { message: 'again' } });
  assert.match(again.result.content[0].text, /again/);
});
