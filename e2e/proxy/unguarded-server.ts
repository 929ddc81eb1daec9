// An MCP 2026-07-28 server on @modelcontextprotocol/server 2.4.0 that
// guards nothing, written for the proxy tests: its requestState is plain
// text ("step=2;name=…"), it never validates answers, and it books a demo
// call (a side effect it counts) on the final round. Run behind
// `mrtr-wasm proxy`, it must never see a forged, tampered, cross-principal
// or changed-argument retry, nor an invalid answer, and must book once per
// logical request however often the final retry is replayed.
//
//   node unguarded-server.ts [PORT]     Streamable HTTP; prints "listening PORT";
//                                       GET /stats: what it saw and did, as JSON
//   STATS_FILE=F node unguarded-server.ts --stdio
//                                       stdio; writes the same JSON to F after each call
import http from 'node:http';
import { writeFileSync } from 'node:fs';
import { McpServer, createMcpHandler, inputRequired, acceptedContent } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { relay } from './fetch-bridge.mjs';

type Seen = { method: string; name?: string; requestState?: string; inputResponses?: unknown; principal?: string };
const seen: Seen[] = [];
// Every tool call that reached a handler, with what the handler was given.
const calls: { tool: string; requestState: string; inputResponses?: unknown }[] = [];
const bookings: string[] = [];
const stats = () => JSON.stringify({ seen, calls, bookings });
function save() {
  if (process.env.STATS_FILE) writeFileSync(process.env.STATS_FILE, stats());
}
function record(tool: string, requestState: string, inputResponses: unknown) {
  calls.push({ tool, requestState, inputResponses });
  save();
}

const contactSchema = {
  type: 'object' as const,
  properties: {
    name: { type: 'string' as const, title: 'Your name', minLength: 1 },
    email: { type: 'string' as const, title: 'Work email', format: 'email' as const },
  },
  required: ['name', 'email'],
};
const confirmSchema = { type: 'object' as const, properties: { ok: { type: 'boolean' as const, title: 'Book it?' } }, required: ['ok'] };

function factory() {
  const server = new McpServer({ name: 'unguarded-booking', version: '1.0.0' });
  server.registerTool('book_demo', {
    description: 'Books a demo call: asks who, then asks to confirm, then books.',
    inputSchema: z.object({ topic: z.string() }),
  }, async ({ topic }, ctx) => {
    const state = ctx.mcpReq.requestState<string>() ?? '';
    const responses = ctx.mcpReq.inputResponses;
    record('book_demo', state, responses);
    if (state === '') {
      return inputRequired({ inputRequests: { contact: inputRequired.elicit({ message: `Who should we book the ${topic} demo for?`, requestedSchema: contactSchema }) }, requestState: 'step=1' });
    }
    if (state === 'step=1') {
      const c = acceptedContent<{ name: string; email: string }>(responses, 'contact');
      if (!c) return { content: [{ type: 'text', text: 'nothing booked' }] };
      return inputRequired({
        inputRequests: { confirm: inputRequired.elicit({ message: `Book ${topic} for ${c.name}?`, requestedSchema: confirmSchema }) },
        requestState: `step=2;name=${c.name};email=${c.email}`,
      });
    }
    const m = /^step=2;name=(.*);email=(.*)$/.exec(state);
    const ok = acceptedContent<{ ok: boolean }>(responses, 'confirm');
    if (!m || !ok?.ok) return { content: [{ type: 'text', text: 'nothing booked' }] };
    bookings.push(`${topic}:${m[1]}:${m[2]}`);
    save();
    return { content: [{ type: 'text', text: `booked ${topic} for ${m[1]} <${m[2]}> (booking ${bookings.length})` }] };
  });
  server.registerTool('ask_password', {
    description: 'Asks for a password in a form (what the proxy must refuse).',
    inputSchema: z.object({}),
  }, async () => (record('ask_password', '', undefined), inputRequired({
    inputRequests: { login: inputRequired.elicit({ message: 'Sign in', requestedSchema: { type: 'object', properties: { user: { type: 'string' }, password: { type: 'string', title: 'Password' } }, required: ['user', 'password'] } }) },
  })));
  server.registerTool('echo', { description: 'Echoes its text.', inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => (record('echo', '', undefined), { content: [{ type: 'text', text }] }));
  return server;
}

if (process.argv[2] === '--stdio') {
  serveStdio(factory, { legacy: 'reject' });
} else {
  serveHTTP();
}

function serveHTTP() {
  const handler = createMcpHandler(factory, { legacy: 'reject' });

  const srv = http.createServer(async (req, res) => {
    try {
      if (req.method === 'GET' && req.url === '/stats') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(stats());
        return;
      }
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks);
      try {
        const msg = JSON.parse(body.toString('utf8'));
        if (msg && msg.method) {
          seen.push({ method: msg.method, name: msg.params?.name, requestState: msg.params?.requestState, inputResponses: msg.params?.inputResponses, principal: req.headers['x-principal'] as string | undefined });
        }
      } catch { /* the SDK answers it */ }
      await relay(handler, req, res, body);
    } catch (e) {
      res.writeHead(500);
      res.end(String(e));
    }
  });
  srv.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
    const a = srv.address();
    console.log(`listening ${typeof a === 'object' && a ? a.port : a}`);
  });
}
