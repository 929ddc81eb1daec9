// A minimal MCP 2026-07-28 server on @modelcontextprotocol/server over
// stdio (serveStdio, which also serves a 2025-era initialize), with one
// echo tool: the Node child of the stdio upstream's memory benchmark
// (BENCHMARKS.md).
//
//   node stdio-echo-server.mjs
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

serveStdio(() => {
  const server = new McpServer({ name: 'stdio-echo', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.registerTool('echo', { description: 'Echoes its text.', inputSchema: z.object({ text: z.string().optional() }) },
    async ({ text }) => ({ content: [{ type: 'text', text: text ?? '' }] }));
  return server;
});
