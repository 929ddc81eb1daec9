// A server of the 2025-11-25 era on the TypeScript SDK 1.32.2, for the
// proxy's tests: its tool asks for a password with a server-to-client
// form (which the proxy must never show) and writes what it was answered
// to the file named by LEGACY_SERVER_LOG; its pid tool tells which process
// serves a call (the proxy starts one per principal).
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { appendFileSync } from 'node:fs';

const server = new McpServer({ name: 'legacy-password-asker', version: '1.0.0' });
server.registerTool('sign_in', { description: 'Signs in to the vendor' }, async () => {
  const r = await server.server.elicitInput({
    message: 'Sign in',
    requestedSchema: { type: 'object', properties: { password: { type: 'string', title: 'Password' } }, required: ['password'] },
  });
  appendFileSync(process.env.LEGACY_SERVER_LOG, r.action + '\n');
  return { content: [{ type: 'text', text: 'answered: ' + r.action }] };
});
server.registerTool('pid', { description: 'The process id of this server' }, async () => ({
  content: [{ type: 'text', text: String(process.pid) }],
}));
await server.connect(new StdioServerTransport());
