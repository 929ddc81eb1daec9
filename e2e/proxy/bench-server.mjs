// The go-sdk conformance fixture's two benchmark tools on
// @modelcontextprotocol/server 2.4.0, over Streamable HTTP: the Node
// upstream of BenchmarkProxy (MRTR_BENCH_UPSTREAM=node), so that what the
// proxy costs can be set against a typical TypeScript server as well as
// against the fixture (BENCHMARKS.md, "The proxy").
//
//   node bench-server.mjs PORT        prints "listening PORT"
import http from 'node:http';
import { McpServer, createMcpHandler, inputRequired, acceptedContent } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { relay } from './fetch-bridge.mjs';

function factory() {
  const server = new McpServer({ name: 'bench-upstream', version: '1.0.0' });
  server.registerTool('test_simple_text', { description: 'Returns a fixed text.', inputSchema: z.object({}) },
    async () => ({ content: [{ type: 'text', text: 'This is a simple text response for testing.' }] }));
  server.registerTool('test_input_required_result_request_state', {
    description: 'Asks to confirm once, then checks that its requestState came back.',
    inputSchema: z.object({}),
  }, async (_args, ctx) => {
    const state = ctx.mcpReq.requestState() ?? '';
    if (state === '') {
      return inputRequired({
        inputRequests: { confirm: inputRequired.elicit({ message: 'Please confirm', requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } }) },
        requestState: 'round-1-state',
      });
    }
    const ok = acceptedContent(ctx.mcpReq.inputResponses, 'confirm');
    return { content: [{ type: 'text', text: state === 'round-1-state' && ok?.ok ? 'state-ok' : 'state-wrong' }] };
  });
  return server;
}

const handler = createMcpHandler(factory, { legacy: 'reject' });
const srv = http.createServer(async (req, res) => {
  try {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    await relay(handler, req, res, Buffer.concat(chunks));
  } catch (e) {
    res.writeHead(500);
    res.end(String(e));
  }
});
srv.keepAliveTimeout = 90_000;
srv.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => console.log(`listening ${srv.address().port}`));
