// A Cloudflare Worker serving the guarded book_demo_call tool over MCP
// (2026-07-28, streamable HTTP, JSON responses) with the official
// TypeScript SDK's fetch-shaped handler: the very tool of the Node example
// (../book-demo/tool.mjs), the very guard.wasm.
//
// Workers compile no WebAssembly at run time: guard.wasm is imported as a
// module (wrangler's default rule for *.wasm makes it a compiled
// WebAssembly.Module) and handed to createGuard.
//
// Bindings: MRTR_KEYS (secret: `wrangler secret put MRTR_KEYS`, PASERK
// k4.local keys, first seals), MCP_TOKENS (secret: JSON {"bearer token":
// "principal"}; use your real authentication instead), MCP_AUDIENCE (var).
//
// The ledger here is in memory: one per isolate, lost when the isolate
// goes. See README.md for a Durable Object ledger.

import { createGuard, keysFromEnv, GuardError } from 'mrtr-wasm';
import guardWasm from 'mrtr-wasm/guard.wasm';
import { mcpHandler, memoryCRM } from '../book-demo/tool.mjs';

let app; // one guard, CRM and MCP handler per isolate, made on first use

async function setup(env) {
  const keys = keysFromEnv(env);
  if (!keys) throw new GuardError('mrtr.config.invalid', 'MRTR_KEYS is not set');
  const guard = await createGuard({ module: guardWasm, keys, audience: env.MCP_AUDIENCE || 'book-demo.example' });
  const crm = memoryCRM();
  // Refusals are logged with their code and reason only: never the state,
  // the answers or a key.
  const mcp = mcpHandler(guard, crm, { log: (o) => console.log(JSON.stringify(o)) });
  return { guard, crm, mcp };
}

function principalOf(request, env) {
  const tokens = typeof env.MCP_TOKENS === 'string' ? JSON.parse(env.MCP_TOKENS) : env.MCP_TOKENS;
  if (!tokens) return 'anonymous';
  const m = /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '');
  return m && Object.hasOwn(tokens, m[1]) ? tokens[m[1]] : undefined;
}

export default {
  async fetch(request, env) {
    if (new URL(request.url).pathname !== '/mcp') return new Response('not found', { status: 404 });
    const principal = principalOf(request, env);
    if (!principal) return new Response(null, { status: 401, headers: { 'www-authenticate': 'Bearer' } });
    app ??= setup(env).catch((e) => {
      app = undefined;
      throw e;
    });
    let mcp;
    try {
      ({ mcp } = await app);
    } catch (e) {
      console.log(JSON.stringify({ event: 'guard.unavailable', code: e?.code ?? 'error' }));
      return new Response('the guard is not configured', { status: 503 });
    }
    return mcp.fetch(request, { authInfo: { token: 'redacted', clientId: principal, scopes: [], extra: { principal } } });
  },
};
