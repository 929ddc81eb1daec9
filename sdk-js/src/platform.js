// The platform layer every runtime uses: WASI preview1 from src/wasi.js,
// nonces from crypto.getRandomValues, and guard.wasm from whatever the
// runtime has (a compiled module, bytes, a fetch Response, a URL, or a
// file path where there is a file system). Nothing here is specific to
// one runtime; the only optional part is node:fs/promises, imported on
// demand for paths (Node, Deno and Bun all provide it).

import { wasiShim } from './wasi.js';
import { GuardError, codes } from './errors.js';

const POOL_SIZE = 4096;
const pool = new Uint8Array(POOL_SIZE);
let poolAt = POOL_SIZE;

/** @type {import('../index.js').Platform} */
export const webPlatform = {
  name: 'wasi-shim',

  async init() {},

  createWasi() {
    return wasiShim();
  },

  // Every call gets fresh bytes, never reused; they come from a 4 KiB
  // buffer that crypto.getRandomValues refills when it runs out (one call
  // costs about as much whatever its size, up to its 64 KiB limit).
  randomFill(b) {
    if (b.length > POOL_SIZE) {
      for (let i = 0; i < b.length; i += 65536) globalThis.crypto.getRandomValues(b.subarray(i, i + 65536));
      return;
    }
    if (poolAt + b.length > POOL_SIZE) {
      globalThis.crypto.getRandomValues(pool);
      poolAt = 0;
    }
    b.set(pool.subarray(poolAt, poolAt + b.length));
    pool.fill(0, poolAt, poolAt + b.length);
    poolAt += b.length;
  },
};

/**
 * Reads a file where the runtime has a file system (node:fs/promises in
 * Node, Deno and Bun); elsewhere a clear error saying what to pass instead.
 * @param {string | URL} path
 * @param {string} what for the error message
 */
export async function readLocalFile(path, what) {
  let fs;
  try {
    // Browsers have no node: modules (and would log a failed fetch).
    if (!globalThis.process?.versions?.node && !globalThis.Deno && !globalThis.Bun) throw new Error('no file system');
    fs = await import('node:fs/promises');
  } catch {
    throw new GuardError(codes.CONFIG_INVALID, `mrtr: this runtime has no file system to read ${what} from: pass its bytes instead`);
  }
  return new Uint8Array(await fs.readFile(path));
}

const isResponse = (x) => typeof Response === 'function' && x instanceof Response;

/**
 * Whether a WebAssembly error says the runtime compiles no code at run
 * time (Cloudflare Workers: "Wasm code generation disallowed by embedder").
 */
export function codegenRefused(e) {
  return /disallowed|code generation/i.test(String(e?.message));
}

async function compile(bytes) {
  try {
    return await WebAssembly.compile(bytes);
  } catch (e) {
    if (codegenRefused(e)) {
      throw new GuardError(
        codes.CONFIG_INVALID,
        'mrtr: this runtime compiles no WebAssembly at run time (Cloudflare Workers): import guard.wasm as a module and pass that WebAssembly.Module',
      );
    }
    throw new GuardError(codes.CONFIG_INVALID, `mrtr: not a valid guard.wasm: ${e.message}`);
  }
}

/**
 * guard.wasm as a compiled WebAssembly.Module, from:
 * - a WebAssembly.Module (Cloudflare Workers: `import wasm from './guard.wasm'`);
 * - its bytes (an ArrayBuffer or any typed array);
 * - a fetch Response or a promise of one (browsers: compiled while it streams);
 * - a URL: http(s), blob and data URLs are fetched, file: URLs read;
 * - a string: a file path (Node, Deno, Bun).
 * @param {WebAssembly.Module | ArrayBuffer | ArrayBufferView | Response | Promise<Response> | URL | string} src
 * @returns {Promise<WebAssembly.Module>}
 */
export async function loadModule(src) {
  if (src instanceof WebAssembly.Module) return src;
  if (src instanceof ArrayBuffer || ArrayBuffer.isView(src)) return compile(src);
  if (src && typeof (/** @type {any} */ (src).then) === 'function') src = await src;
  if (isResponse(src)) {
    const r = /** @type {Response} */ (src);
    if (!r.ok) throw new GuardError(codes.CONFIG_INVALID, `mrtr: fetching guard.wasm failed: HTTP ${r.status}`);
    return compile(await r.arrayBuffer());
  }
  if (src instanceof URL && src.protocol !== 'file:') {
    return loadModule(await fetch(src));
  }
  if (typeof src === 'string' || src instanceof URL) return compile(await readLocalFile(src, 'guard.wasm'));
  throw new GuardError(codes.CONFIG_INVALID, 'mrtr: module must be a WebAssembly.Module, bytes, a Response, a URL or a file path');
}
