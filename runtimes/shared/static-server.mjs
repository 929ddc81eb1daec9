// A static file server on a random loopback port for the browser legs:
// the repository root (the installed package, the vectors, the policy
// data) plus a few extra files. Only GET; no directory listings; no path
// outside the roots.

import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { resolve, sep, extname } from 'node:path';

const TYPES = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.html': 'text/html; charset=utf-8', '.json': 'application/json', '.wasm': 'application/wasm', '.gz': 'application/gzip' };

/**
 * @param {string} root directory served at /
 * @param {Record<string, string>} extra URL path -> file
 * @param {Record<string, string>} headers added to every response
 */
export async function serveStatic(root, extra = {}, headers = {}) {
  const base = resolve(root);
  const server = createServer(async (req, res) => {
    try {
      const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
      let file = extra[path];
      if (!file) {
        file = resolve(base, '.' + path);
        if (file !== base && !file.startsWith(base + sep)) throw Object.assign(new Error('outside'), { status: 403 });
      }
      if (req.method !== 'GET') throw Object.assign(new Error('method'), { status: 405 });
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store', ...headers });
      res.end(body);
    } catch (e) {
      res.writeHead(e.status ?? 404).end();
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((r) => server.close(r)),
  };
}
