// Policies in Node: the OPA Wasm bundle that `mrtr-wasm policy build`
// writes (the Go policy package's WriteBundle: /policy.wasm with the
// entrypoints mrtr/ask/decision and mrtr/resume/decision, /data.json with
// the data file at mrtr.config), evaluated with @open-policy-agent/opa-wasm.
// The decision document goes to the guard as the policy wrote it, and the
// guard core reads it (guest/ABI.md, "policy"), exactly as for the Go
// host: nothing here judges it. Portable: it uses DecompressionStream and
// WebAssembly only.

import { GuardError, codes } from './errors.js';
import { codegenRefused } from './platform.js';

export const ASK_ENTRYPOINT = 'mrtr/ask/decision';
export const RESUME_ENTRYPOINT = 'mrtr/resume/decision';

const encoder = new TextEncoder();

// The opa-wasm module: its Node entry exports loadPolicy, its browser ESM
// build (dist/opa-wasm-browser.esm.js) a default object that has it.
async function opaWasm(given) {
  let m = given;
  if (m === undefined) {
    try {
      m = await import('@open-policy-agent/opa-wasm');
    } catch {
      throw new GuardError(codes.CONFIG_INVALID, 'mrtr: policies need @open-policy-agent/opa-wasm: npm install @open-policy-agent/opa-wasm');
    }
  }
  const loadPolicy = m?.loadPolicy ?? m?.default?.loadPolicy;
  if (typeof loadPolicy !== 'function') throw new GuardError(codes.CONFIG_INVALID, 'mrtr: options.opa must be the @open-policy-agent/opa-wasm module');
  return { loadPolicy };
}

async function gunzip(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

// The files of a tar archive (ustar; PAX and GNU long names as Go's
// archive/tar writes them).
function untar(b) {
  const files = new Map();
  const dec = new TextDecoder();
  const str = (o, n) => {
    const s = dec.decode(b.subarray(o, o + n));
    const z = s.indexOf('\0');
    return z < 0 ? s : s.slice(0, z);
  };
  let longName = null;
  for (let o = 0; o + 512 <= b.length; ) {
    if (b.subarray(o, o + 512).every((x) => x === 0)) break;
    let name = str(o, 100);
    const size = parseInt(str(o + 124, 12).trim() || '0', 8);
    const type = String.fromCharCode(b[o + 156] || 0x30);
    const prefix = str(o + 345, 155);
    if (prefix) name = `${prefix}/${name}`;
    const body = b.subarray(o + 512, o + 512 + size);
    o += 512 + Math.ceil(size / 512) * 512;
    if (type === 'x') {
      const m = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(dec.decode(body));
      if (m) longName = m[1];
      continue;
    }
    if (type === 'L') {
      longName = dec.decode(body).replace(/\0.*$/s, '');
      continue;
    }
    if (type === '0' || type === '\0') files.set('/' + (longName ?? name).replace(/^\/+/, ''), body);
    longName = null;
  }
  return files;
}

// A policy is a pure function of its input (the Go loader allows no clock,
// network or random builtins), so decisions are memoised per loaded data,
// as the Go policy package does: the same form asked again costs a lookup.
const MEMO_MAX = 4096;

/**
 * A policy from an OPA Wasm bundle (tar.gz bytes) or its parts.
 * @param {Uint8Array | ArrayBuffer | {wasm: Uint8Array | WebAssembly.Module, data?: unknown}} bundle
 * @param {{data?: unknown, opa?: object}} [options] data: a data file's document, used as mrtr.config instead of the
 *   bundle's; opa: the @open-policy-agent/opa-wasm module, where it cannot be imported by name
 */
export async function policyFromBundle(bundle, options = {}) {
  let wasm;
  let data;
  if (bundle instanceof Uint8Array || bundle instanceof ArrayBuffer) {
    const files = untar(await gunzip(bundle));
    wasm = files.get('/policy.wasm');
    if (!wasm) throw new GuardError(codes.CONFIG_INVALID, 'mrtr: the policy bundle has no /policy.wasm (build it with `mrtr-wasm policy build`)');
    const dj = files.get('/data.json');
    data = dj ? JSON.parse(new TextDecoder().decode(dj)) : {};
  } else {
    wasm = bundle.wasm;
    data = bundle.data ?? {};
  }
  if (options.data !== undefined) data = { ...data, mrtr: { ...(data.mrtr ?? {}), config: options.data } };
  const { loadPolicy } = await opaWasm(options.opa);
  let opa;
  try {
    opa = await loadPolicy(wasm);
  } catch (e) {
    if (!codegenRefused(e)) throw e;
    throw new GuardError(
      codes.CONFIG_INVALID,
      'mrtr: this runtime compiles no WebAssembly at run time (Cloudflare Workers): pass the bundle as { wasm, data }, with policy.wasm imported as a module',
    );
  }
  for (const e of [ASK_ENTRYPOINT, RESUME_ENTRYPOINT]) {
    if (!Object.hasOwn(opa.entrypoints, e)) throw new GuardError(codes.CONFIG_INVALID, `mrtr: the policy bundle has no entrypoint ${e}`);
  }
  opa.setData(data);

  // raw returns the entrypoint's decision document as the policy wrote it
  // (undefined when it gave none).
  function raw(entrypoint, input) {
    // A string is the input's JSON text (the core's bytes): OPA reads it as is.
    const rs = opa.evaluate(typeof input === 'string' ? encoder.encode(input).buffer : input, entrypoint);
    if (!Array.isArray(rs) || rs.length !== 1 || !rs[0] || !('result' in rs[0])) return undefined;
    return rs[0].result;
  }
  let memo = new Map();
  function decide(entrypoint, q) {
    // The input is the guard core's (guest/ABI.md policy.input): canonical
    // text, so equal queries are one memo entry.
    const input = q?.input;
    if (typeof input !== 'string') {
      throw new GuardError(codes.POLICY_DENIED, 'the policy input was not built by the guard core (policy.input)', { reason: 'policy_input' });
    }
    const k = entrypoint + '\n' + input;
    let d = memo.get(k);
    if (d === undefined) {
      // The document as the policy wrote it (null: no decision), for the
      // guard core to read.
      d = { document: raw(entrypoint, input) ?? null };
      if (memo.size >= MEMO_MAX) memo.delete(memo.keys().next().value);
      memo.set(k, d);
    }
    return structuredClone(d);
  }

  return {
    entrypoints: Object.keys(opa.entrypoints),
    raw,
    /** Replaces the data file (the document at mrtr.config). */
    setData(config) {
      data = { ...data, mrtr: { ...(data.mrtr ?? {}), config } };
      opa.setData(data);
      memo = new Map();
    },
    /** q.input: the policy input the guard core built (the guard sets it). */
    ask(q) {
      return decide(ASK_ENTRYPOINT, q);
    },
    resume(q) {
      return decide(RESUME_ENTRYPOINT, q);
    },
  };
}
