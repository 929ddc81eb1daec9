// mrtr-wasm: the guard core (guard.wasm, the very module the Go host runs)
// behind an API that mirrors the Go host, for every JavaScript runtime an
// MCP server runs in: Node, Deno, Bun, Cloudflare Workers (workerd) and
// browsers. One entry point and one platform layer (src/platform.js: a
// WASI preview1 shim over Web APIs) for all of them; no runtime-specific
// import is evaluated unless a file path is given.

import { createGuardWith } from './src/guard.js';
import { webPlatform, loadModule, readLocalFile } from './src/platform.js';
import { parseKeys } from './src/keys.js';
import { policyFromBundle } from './src/policy.js';
import { GuardError, codes } from './src/errors.js';

export { GuardError, codes } from './src/errors.js';
export { Keyring, parseKeys, generateKey } from './src/keys.js';
export { rawJSON } from './src/json.js';
export { form, url, sampling, roots, isRetry, Outcome, Status, createGuardWith } from './src/guard.js';
export { MemoryLedger, LedgerLostError, ClaimStatus, fingerprint } from './src/ledger.js';
export { RedisLedger, redisLedger } from './src/redis-ledger.js';
export { policyFromBundle, ASK_ENTRYPOINT, RESUME_ENTRYPOINT } from './src/policy.js';
export { wasiShim, WASIExit } from './src/wasi.js';
export { webPlatform as platform, loadModule };

/**
 * The guard.wasm this package ships (a copy of the Go host's
 * wasm/guard.wasm), or undefined where modules have no URL.
 */
export const wasmURL = bundledURL();

function bundledURL() {
  try {
    return new URL('./guard.wasm', import.meta.url);
  } catch {
    return undefined;
  }
}

let defaultModule;

/**
 * Creates a guard. options.module is guard.wasm as a WebAssembly.Module,
 * bytes, a Response, a URL or a file path; without it the bundled
 * guard.wasm is loaded once per process (read from disk in Node, Deno and
 * Bun, fetched in a browser). Cloudflare Workers must pass the module they
 * imported.
 * @param {import('./index.d.ts').GuardOptions} options
 */
export async function createGuard(options) {
  let module;
  if (options?.module !== undefined) module = await loadModule(options.module);
  else {
    if (wasmURL === undefined) {
      throw new GuardError(codes.CONFIG_INVALID, 'mrtr: pass guard.wasm as options.module (a WebAssembly.Module or its bytes)');
    }
    module = await (defaultModule ??= loadModule(wasmURL).catch((e) => {
      defaultModule = undefined;
      throw e;
    }));
  }
  return createGuardWith(webPlatform, module, options);
}

/**
 * Reads MRTR_KEYS from env (default: process.env where there is one; pass
 * a Worker's env binding object there); undefined when it is unset or blank.
 */
export function keysFromEnv(env = globalThis.process?.env ?? {}) {
  const v = env?.MRTR_KEYS;
  if (v === undefined || v === null || String(v).trim() === '') return undefined;
  try {
    return parseKeys(String(v));
  } catch (e) {
    e.message = `MRTR_KEYS: ${e.message}`;
    throw e;
  }
}

/** Reads a key file in the MRTR_KEYS format (Node, Deno, Bun). */
export async function loadKeyFile(path) {
  const text = new TextDecoder().decode(await readLocalFile(path, 'a key file'));
  try {
    return parseKeys(text);
  } catch (e) {
    e.message = `${path}: ${e.message}`;
    throw e;
  }
}

/**
 * Loads the OPA Wasm bundle `mrtr-wasm policy build` writes: a file path,
 * a URL (file: read, others fetched), its bytes, or its parts
 * { wasm, data } (wasm may be a compiled WebAssembly.Module: Cloudflare
 * Workers compile nothing at run time). options.data replaces the bundle's
 * data file (the document at mrtr.config); options.opa is the
 * @open-policy-agent/opa-wasm module where it cannot be imported by name.
 */
export async function loadPolicy(source, options = {}) {
  let bundle = source;
  if (source instanceof URL && source.protocol !== 'file:') {
    const r = await fetch(source);
    if (!r.ok) throw new Error(`mrtr: fetching the policy bundle failed: HTTP ${r.status}`);
    bundle = new Uint8Array(await r.arrayBuffer());
  } else if (typeof source === 'string' || source instanceof URL) {
    bundle = await readLocalFile(source, 'the policy bundle');
  } else if (source instanceof ArrayBuffer) {
    bundle = new Uint8Array(source);
  }
  return policyFromBundle(bundle, options);
}
