// A server of the 2025-11-25 era on the TypeScript SDK 1.32.2 over
// Streamable HTTP (sessions), for the client matrix: echo (plain) and
// ask_name, which asks for a name with a server-to-client
// elicitation/create related to the call (so that it comes on the call's
// own stream: the proxy opens no standalone GET stream, and a request sent
// there without relatedRequestId would wait for ever). Prints
// "listening PORT".
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

function newServer() {
  const server = new McpServer({ name: 'sdk-1.32.2-http', version: '1.0.0' });
  server.registerTool('echo', { description: 'Echoes its text', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text }] }));
  server.registerTool('ask_name', { description: 'Asks who is calling' }, async (extra) => {
    const r = await server.server.elicitInput({
      message: 'What is your name?',
      requestedSchema: { type: 'object', properties: { name: { type: 'string', title: 'Your name' } }, required: ['name'] },
    }, { relatedRequestId: extra.requestId });
    return { content: [{ type: 'text', text: r.action === 'accept' ? `Hello, ${r.content.name}!` : `no name (${r.action})` }] };
  });
  return server;
}

const sessions = new Map();
const srv = http.createServer(async (req, res) => {
  try {
    const id = req.headers['mcp-session-id'];
    let t = id && sessions.get(id);
    if (!t) {
      if (id) { res.writeHead(404).end(); return; }
      t = new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, onsessioninitialized: (sid) => sessions.set(sid, t) });
      t.onclose = () => t.sessionId && sessions.delete(t.sessionId);
      await newServer().connect(t);
    }
    await t.handleRequest(req, res);
  } catch (e) {
    if (!res.headersSent) res.writeHead(500);
    res.end(String(e));
  }
});
srv.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => console.log(`listening ${srv.address().port}`));
