// The wire check of the client matrix: every JSON-RPC message serve or the
// proxy sends to a client is validated against the revision that client
// speaks, and every failure is kept (the test fails on any).
//
// - MCP 2026-07-28: the official JSON schema (testdata/mcp-schema-2026-07-28/
//   schema.json, draft 2020-12) with ajv: the message as a JSONRPCMessage,
//   and a result as the result type of the method it answers.
// - MCP 2025-11-25: the official schema.json of that revision is in no npm
//   package and a fetched copy may not be committed here, so 2025-era
//   messages are checked with the zod schemas of the TypeScript SDK 1.32.2
//   (@modelcontextprotocol/sdk/types.js): exactly what that SDK, the most
//   deployed 2025-era client, refuses.
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import * as v1 from '@modelcontextprotocol/sdk/types.js';

const here = dirname(fileURLToPath(import.meta.url));
const schema = JSON.parse(readFileSync(join(here, '../../testdata/mcp-schema-2026-07-28/schema.json'), 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: false });
addFormats(ajv);
ajv.addSchema(schema, 'mcp');
const def = (name) => {
  const v = ajv.getSchema(`mcp#/$defs/${name}`);
  if (!v) throw new Error(`no ${name} in the 2026-07-28 schema`);
  return v;
};

// The result type of each method, in each revision.
const results2026 = {
  'server/discover': 'DiscoverResult', 'tools/list': 'ListToolsResult', 'tools/call': 'CallToolResult',
  'prompts/list': 'ListPromptsResult', 'prompts/get': 'GetPromptResult', 'resources/list': 'ListResourcesResult',
  'resources/templates/list': 'ListResourceTemplatesResult', 'resources/read': 'ReadResourceResult',
  'completion/complete': 'CompleteResult', 'subscriptions/listen': 'SubscriptionsListenResult', ping: 'EmptyResult',
};
const results2025 = {
  initialize: v1.InitializeResultSchema, 'tools/list': v1.ListToolsResultSchema, 'tools/call': v1.CallToolResultSchema,
  'prompts/list': v1.ListPromptsResultSchema, 'prompts/get': v1.GetPromptResultSchema, 'resources/list': v1.ListResourcesResultSchema,
  'resources/templates/list': v1.ListResourceTemplatesResultSchema, 'resources/read': v1.ReadResourceResultSchema,
  'completion/complete': v1.CompleteResultSchema, ping: v1.EmptyResultSchema, 'logging/setLevel': v1.EmptyResultSchema,
};

const ajvErr = (v) => ajv.errorsText(v.errors, { dataVar: 'message' });

// check returns what is wrong with msg, a message sent to a client of
// era ('2026-07-28' or '2025-11-25') as the answer to method (for a
// response), or null when it is valid.
export function check(era, msg, method) {
  const isResponse = msg && typeof msg === 'object' && ('result' in msg || 'error' in msg) && !('method' in msg);
  if (era === '2026-07-28') {
    const whole = def('JSONRPCMessage');
    if (!whole(msg)) return `not a JSONRPCMessage: ${ajvErr(whole)}`;
    if (isResponse && 'result' in msg) {
      const name = msg.result?.resultType === 'input_required' ? 'InputRequiredResult' : results2026[method];
      if (!name) return `a result to ${method}, which has no result type in 2026-07-28`;
      const v = def(name);
      if (!v(msg.result)) return `not a ${name}: ${ajvErr(v)}`;
    } else if (!isResponse && 'id' in msg) {
      return `a server-to-client request (${msg.method}), which 2026-07-28 does not have`;
    } else if (!isResponse) {
      const v = def('ServerNotification');
      if (!v(msg)) return `not a ServerNotification: ${ajvErr(v)}`;
    }
    return null;
  }
  const whole = v1.JSONRPCMessageSchema.safeParse(msg);
  if (!whole.success) return `not a JSONRPCMessage (SDK 1.32.2): ${whole.error.message}`;
  let r;
  if (isResponse && 'result' in msg) {
    const s = results2025[method];
    if (!s) return `a result to ${method}, which the SDK 1.32.2 has no result schema for`;
    r = s.safeParse(msg.result);
  } else if (!isResponse && 'id' in msg) {
    r = v1.ServerRequestSchema.safeParse({ method: msg.method, params: msg.params });
  } else if (!isResponse) {
    r = v1.ServerNotificationSchema.safeParse({ method: msg.method, params: msg.params });
  }
  return r && !r.success ? `refused by the SDK 1.32.2's schema: ${r.error.message}` : null;
}

// eraOf tells a client's revision from its first message: a 2025-era
// client opens with initialize of its version; a 2026-07-28 one never
// sends initialize.
export function eraOf(first) {
  return first?.method === 'initialize' && first.params?.protocolVersion < '2026-07-28' ? '2025-11-25' : '2026-07-28';
}

// httpTap listens on a loopback port and relays every request to target
// (a Streamable HTTP endpoint) unchanged, checking each JSON-RPC message
// of the answers, JSON or event stream, as it passes. It resolves to
// { url, failures, checked(), close() }.
import http from 'node:http';

export function httpTap(target) {
  const t = new URL(target);
  const failures = [];
  let checked = 0;
  const seen = (era, raw, methods) => {
    let m;
    try { m = JSON.parse(raw); } catch { failures.push({ era, why: 'not JSON', message: raw.slice(0, 2000) }); return; }
    for (const one of Array.isArray(m) ? m : [m]) {
      checked++;
      const why = check(era, one, methods.get(JSON.stringify(one?.id)));
      if (why) failures.push({ era, why, message: JSON.stringify(one).slice(0, 2000) });
    }
  };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const methods = new Map();
      let first;
      try {
        first = JSON.parse(body.toString('utf8'));
        for (const m of Array.isArray(first) ? first : [first]) if (m?.method && 'id' in m) methods.set(JSON.stringify(m.id), m.method);
      } catch { /* not JSON: the server answers it */ }
      const era = req.headers['mcp-session-id'] || eraOf(first) === '2025-11-25' ? '2025-11-25' : '2026-07-28';
      const headers = { ...req.headers, host: t.host };
      const up = http.request({ host: t.hostname, port: t.port, path: t.pathname + t.search, method: req.method, headers }, (ur) => {
        res.writeHead(ur.statusCode, ur.headers);
        const type = String(ur.headers['content-type'] ?? '');
        let buf = '';
        const json = [];
        ur.on('data', (c) => {
          res.write(c);
          if (type.startsWith('text/event-stream')) {
            buf += c.toString('utf8');
            let i;
            while ((i = buf.search(/\r?\n\r?\n/)) >= 0) {
              const event = buf.slice(0, i);
              buf = buf.slice(i).replace(/^\r?\n\r?\n/, '');
              const data = event.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
              if (data) seen(era, data, methods);
            }
          } else if (type.startsWith('application/json')) {
            json.push(c);
          }
        });
        ur.on('end', () => {
          if (json.length) seen(era, Buffer.concat(json).toString('utf8'), methods);
          res.end();
        });
      });
      up.on('error', (e) => { res.writeHead(502); res.end(String(e)); });
      res.on('close', () => up.destroy());
      up.end(body);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}${t.pathname}`,
    failures,
    checked: () => checked,
    close: () => { server.closeAllConnections(); server.close(); },
  })));
}
