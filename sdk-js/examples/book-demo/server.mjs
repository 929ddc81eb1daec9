// A Node MCP server (MCP 2026-07-28, the official TypeScript SDK v2) whose
// book_demo_call tool (tool.mjs) is guarded by mrtr-wasm, with the same
// flow as the Go demo. This file is the Node transport only (node:http);
// ../worker/worker.js serves the same tool from a Cloudflare Worker.
//
//   MRTR_KEYS=k4.local.… node examples/book-demo/server.mjs [port]

import { createServer as createHttpServer } from 'node:http';
import { createGuard, keysFromEnv, generateKey } from 'mrtr-wasm';
import { memoryCRM, mcpHandler } from './tool.mjs';

export { contactSchema, memoryCRM, bookDemoCall } from './tool.mjs';

const MAX_BODY = 1 << 20;

/**
 * Starts the example on 127.0.0.1:port (0 = any free port).
 * @param {{guard?: object, crm?: object, port?: number, tokens?: Record<string, string>, log?: (o: object) => void}} o
 */
export async function start(o = {}) {
  const guard = o.guard ?? (await createGuard({ keys: keysFromEnv() ?? generateKey(), audience: 'book-demo.example' }));
  const crm = o.crm ?? memoryCRM();
  const mcp = mcpHandler(guard, crm, { log: o.log, maxRequestBodySize: MAX_BODY });

  const http = createHttpServer(async (req, res) => {
    try {
      // Principals from bearer tokens; without a token map every caller
      // is "anonymous".
      let principal = 'anonymous';
      if (o.tokens) {
        const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
        principal = m ? o.tokens[m[1]] : undefined;
        if (!principal) {
          res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
          return;
        }
      }
      const response = await mcp.fetch(await toRequest(req), {
        authInfo: { token: 'redacted', clientId: principal, scopes: [], extra: { principal } },
      });
      await sendResponse(res, response);
    } catch (e) {
      if (!res.headersSent) res.writeHead(e?.status ?? 500);
      res.end();
    }
  });
  await new Promise((resolve) => http.listen(o.port ?? 0, '127.0.0.1', resolve));
  const { port } = http.address();
  return {
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    crm,
    guard,
    async close() {
      await mcp.close();
      await new Promise((resolve) => http.close(resolve));
      http.closeAllConnections?.();
    },
  };
}

// node:http ⇄ web Request/Response, for the SDK's fetch-shaped handler.
async function toRequest(req) {
  const chunks = [];
  let size = 0;
  for await (const c of req) {
    size += c.length;
    if (size > MAX_BODY) throw Object.assign(new Error('body too large'), { status: 413 });
    chunks.push(c);
  }
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    for (const x of Array.isArray(v) ? v : [v]) headers.append(k, x);
  }
  const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.concat(chunks);
  return new Request(`http://${req.headers.host ?? '127.0.0.1'}${req.url}`, { method: req.method, headers, body });
}

async function sendResponse(res, response) {
  res.statusCode = response.status;
  response.headers.forEach((v, k) => res.setHeader(k, v));
  if (response.body) {
    for await (const chunk of response.body) res.write(chunk);
  }
  res.end();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const s = await start({ port: Number(process.argv[2] ?? 3000), log: (o) => console.error(JSON.stringify(o)) });
  console.log(`book_demo_call on ${s.url} (every caller is the principal "anonymous")`);
}
