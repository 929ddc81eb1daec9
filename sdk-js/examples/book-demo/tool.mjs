// The book_demo_call tool, guarded by mrtr-wasm: everything that is not
// transport. The Node server (server.mjs, node:http) and the Cloudflare
// Worker (../worker/worker.js) both serve exactly this handler, with the
// official TypeScript SDK's Server, so the flow is the same everywhere: a
// form for the name and work email; decline books nothing; cancel says the
// request can be made again; a missing or invalid email gets a new form
// naming the field; a valid answer books exactly once, through guard.once
// and its ledger, however often the final retry is replayed.

import { Server, ProtocolError, createMcpHandler } from '@modelcontextprotocol/server';
import { form, isRetry, GuardError } from 'mrtr-wasm';

const CAPS = 'io.modelcontextprotocol/clientCapabilities';
export const contactSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Your name', minLength: 1 },
    email: { type: 'string', title: 'Work email', format: 'email' },
  },
  required: ['name', 'email'],
};

export const tool = {
  name: 'book_demo_call',
  title: 'Book a demo call',
  description: 'Books a demo call with our sales team; asks who it is for.',
  inputSchema: { type: 'object', properties: { topic: { type: 'string', description: 'What the call is about' } } },
};

const text = (t) => ({ content: [{ type: 'text', text: t }] });

/** An in-memory CRM: the bookings, in order. */
export function memoryCRM() {
  const bookings = [];
  return {
    bookings,
    async book(principal, contact, topic, operationId) {
      const b = { id: `b-${bookings.length + 1}`, principal, name: contact.name, email: contact.email, topic, operationId, created_at: new Date().toISOString() };
      bookings.push(b);
      return b;
    },
  };
}

/**
 * The tools/call handler: everything MRTR-specific is the guard's.
 * @param {import('mrtr-wasm').Guard} guard
 */
export function bookDemoCall(guard, crm) {
  return async (request, ctx) => {
    const principal = ctx.http?.authInfo?.extra?.principal ?? 'anonymous';
    const args = request.params.arguments ?? {};
    const req = {
      principal,
      method: 'tools/call',
      target: tool.name,
      arguments: args,
      capabilities: ctx.mcpReq.envelope?.[CAPS] ?? {},
      inputResponses: ctx.mcpReq.inputResponses,
      requestState: ctx.mcpReq.requestState(),
    };
    if (!isRetry(req)) {
      return guard.ask(req, [form('contact', 'Who should we book the demo call for?', contactSchema)]);
    }
    const out = await guard.resume(req);
    switch (out.status) {
      case 'input_required':
        return out.inputRequired; // names each wrong field, keeps the right ones
      case 'declined':
        return text('Nothing was booked: you declined to share your contact details.');
      case 'cancelled':
        return text('Nothing was booked yet. You can ask to book the demo call again at any time.');
    }
    const contact = out.content('contact');
    const topic = typeof args.topic === 'string' ? args.topic : 'a product demo';
    const { result: b, replay } = await guard.once(out, ({ operationId }) => crm.book(principal, contact, topic, operationId));
    return {
      content: [{ type: 'text', text: `Booked demo call ${b.id} for ${b.name} <${b.email}> about ${b.topic}.` }],
      _meta: { 'mrtr-wasm/replay': replay },
    };
  };
}

/** GuardError → JSON-RPC error; the reason goes to the log only. */
export function rpcError(e, log) {
  if (!(e instanceof GuardError)) return e;
  if (e.reason) log?.({ event: 'guard.refused', code: e.code, reason: e.reason });
  const data = e.data && typeof e.data === 'object' ? e.data : undefined;
  return new ProtocolError(e.jsonRpcCode, e.message, data);
}

/**
 * The MCP endpoint: the SDK's fetch-shaped handler (a web Request in, a
 * Response out), serving tools/list and the guarded tools/call. The SDK's
 * low-level Server is used so that a refused requestState is a JSON-RPC
 * error (-32602), as the spec's conformance suite expects; McpServer turns
 * every handler error into an isError result.
 * @param {{log?: (o: object) => void, maxRequestBodySize?: number}} [o]
 */
export function mcpHandler(guard, crm, o = {}) {
  const handle = bookDemoCall(guard, crm);
  return createMcpHandler(
    () => {
      const s = new Server({ name: 'mrtr-wasm-book-demo', version: '0.1.0' }, { capabilities: { tools: {} } });
      s.setRequestHandler('tools/list', () => ({ tools: [tool] }));
      s.setRequestHandler('tools/call', async (request, ctx) => {
        if (request.params.name !== tool.name) throw new ProtocolError(-32602, `Unknown tool: ${request.params.name}`);
        try {
          return await handle(request, ctx);
        } catch (e) {
          throw rpcError(e, o.log);
        }
      });
      return s;
    },
    { legacy: 'reject', responseMode: 'json', maxRequestBodySize: o.maxRequestBodySize ?? 1 << 20 },
  );
}
