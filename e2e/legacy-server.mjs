// A server of the 2025-11-25 era on the TypeScript SDK 1.32.2, for the
// proxy's tests: its tool asks for a password with a server-to-client
// form (which the proxy must never show) and writes what it was answered
// to the file named by LEGACY_SERVER_LOG; its pid tool tells which process
// serves a call (the proxy starts one per principal); list_roots asks the
// client's roots/list in the middle of the call and returns what it got;
// work sends progress and a log message before its answer.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { appendFileSync } from 'node:fs';

const server = new McpServer({ name: 'legacy-password-asker', version: '1.0.0' }, { capabilities: { logging: {} } });
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
server.registerTool('list_roots', { description: 'The roots the client gave during this call' }, async () => {
  try {
    const r = await server.server.listRoots();
    return { content: [{ type: 'text', text: 'roots: ' + JSON.stringify(r.roots) }] };
  } catch (e) {
    return { content: [{ type: 'text', text: 'no roots: ' + e.message }] };
  }
});
server.registerTool('work', { description: 'Reports progress and logs while it works' }, async (extra) => { // no inputSchema: the handler gets extra only
  const token = extra._meta?.progressToken;
  if (token !== undefined) {
    await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: 1, total: 2, message: 'halfway' } });
  }
  await server.sendLoggingMessage({ level: 'debug', data: 'too fine' });
  await server.sendLoggingMessage({ level: 'warning', data: 'working hard' });
  return { content: [{ type: 'text', text: 'done' }] };
});
await server.connect(new StdioServerTransport());
