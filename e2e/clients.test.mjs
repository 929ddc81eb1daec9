// The official TypeScript SDK 2.4.0 client (@modelcontextprotocol/client,
// MCP 2026-07-28) through `mrtr-wasm proxy` in front of servers of the
// 2025-11-25 era (server-everything, stdio and Streamable HTTP), on both
// transports of the client: it lists the tools, calls a plain tool and
// completes a call that needs input, answering through its own
// elicitation handler. The proxy must send every result valid in the
// client's revision (resultType, ttlMs and cacheScope), which the SDK
// checks. Run by e2e/legacy.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const BIN = process.env.MRTR_BIN;
const here = dirname(fileURLToPath(import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'mrtr-clients-'));
const everything = [join(here, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'stdio'];
const procs = [];
const env = () => ({ ...process.env, MRTR_KEYS: execFileSync(BIN, ['keygen']).toString().trim() });

async function startProxy(args) {
  let logs = '';
  const p = spawn(BIN, ['proxy', '--addr', '127.0.0.1:0', '--log-format', 'text', ...args], { env: env(), stdio: ['ignore', 'ignore', 'pipe'] });
  p.stderr.on('data', (d) => { logs += d; });
  procs.push(p);
  for (let i = 0; i < 600 && p.exitCode === null; i++) {
    const addr = logs.match(/msg=listening mcp=http:\/\/(127\.0\.0\.1:\d+)\/mcp/);
    if (addr) return { url: `http://${addr[1]}/mcp`, logs: () => logs };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the proxy did not start:\n' + logs);
}

before(() => assert.ok(BIN, 'set MRTR_BIN to a built mrtr-wasm (e2e/legacy.sh does)'));
after(() => {
  for (const p of procs) p.kill();
  rmSync(work, { recursive: true, force: true });
});

// answer fills server-everything's form with valid values.
const answer = async (req) => {
  assert.equal(req.params.mode ?? 'form', 'form');
  assert.ok(req.params.requestedSchema.properties.name, 'the form asks for a name');
  return { action: 'accept', content: { name: 'Ann Lee', email: 'ann@example.com', integer: 42 } };
};

async function exercise(transport) {
  const client = new Client({ name: 'mrtr-wasm-matrix', version: '1.0.0' }, {
    versionNegotiation: { mode: { pin: '2026-07-28' } },
    capabilities: { elicitation: { form: {} } },
    inputRequired: { autoFulfill: true },
  });
  let asked = 0;
  client.setRequestHandler('elicitation/create', async (req) => { asked++; return answer(req); });
  await client.connect(transport);
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  assert.ok(names.includes('echo') && names.includes('trigger-elicitation-request'), names.join(','));
  const echo = await client.callTool({ name: 'echo', arguments: { message: 'hi' } });
  assert.match(echo.content[0].text, /hi/);
  const elicited = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
  assert.equal(asked, 1, 'the SDK asked its handler once');
  const text = elicited.content.map((c) => c.text).join('\n');
  assert.match(text, /Ann Lee/);
  await client.close();
}

test('TS SDK 2.4.0 over Streamable HTTP -> proxy -> server-everything (stdio, 2025 era)', async () => {
  const px = await startProxy(['--', process.execPath, ...everything]);
  await exercise(new StreamableHTTPClientTransport(new URL(px.url)));
});

test('TS SDK 2.4.0 over stdio -> proxy --stdio -> server-everything (stdio, 2025 era)', async () => {
  await exercise(new StdioClientTransport({
    command: BIN, args: ['proxy', '--stdio', '--addr', '127.0.0.1:0', '--log-format', 'text', '--', process.execPath, ...everything],
    env: env(), stderr: 'ignore',
  }));
});
