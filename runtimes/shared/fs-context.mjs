// The suite's inputs where there is a file system (Node, Deno and Bun all
// provide node:fs): the installed package's guard.wasm, the vectors, the
// policy bundle run.sh built (MRTR_POLICY_BUNDLE) and the sha256 run.sh
// computed of ../wasm/guard.wasm (MRTR_WASM_SHA256).

import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { exitModuleBytes, sha256 } from './suite.mjs';

export const repoDir = fileURLToPath(new URL('../../', import.meta.url));
export const packageWasm = fileURLToPath(new URL('../node_modules/mrtr-wasm/guard.wasm', import.meta.url));

const env = (k) => globalThis.process?.env?.[k] ?? globalThis.Deno?.env.get(k);

export function vectors() {
  const dir = repoDir + 'testdata/vectors/';
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((name) => ({ name, file: JSON.parse(readFileSync(dir + name, 'utf8')) }));
}

export function policyInputs(bundlePath) {
  if (!bundlePath) throw new Error('MRTR_POLICY_BUNDLE is not set: run.sh builds the bundle with `mrtr-wasm policy build policies -o FILE`');
  const cases = JSON.parse(readFileSync(repoDir + 'testdata/policy/cases.json', 'utf8'));
  const dataFiles = {};
  for (const c of cases.cases) dataFiles[c.data] ??= JSON.parse(readFileSync(repoDir + c.data, 'utf8'));
  dataFiles['policies/data/demo.json'] ??= JSON.parse(readFileSync(repoDir + 'policies/data/demo.json', 'utf8'));
  return { bundle: new Uint8Array(readFileSync(bundlePath)), cases, dataFiles };
}

/**
 * The suite context for a runtime with a file system.
 * @param {{wasmPath?: string, policyBundle?: string}} [o] default: the installed package's guard.wasm, $MRTR_POLICY_BUNDLE
 */
export async function fsContext(runtime, log, o = {}) {
  const wasmPath = o.wasmPath ?? packageWasm;
  const wasm = new Uint8Array(readFileSync(wasmPath));
  const expected = env('MRTR_WASM_SHA256') || (await sha256(readFileSync(repoDir + 'wasm/guard.wasm')));
  const module = await WebAssembly.compile(wasm);
  return {
    runtime,
    wasm,
    module,
    sha256: expected,
    vectors: vectors(),
    exitModule: await WebAssembly.compile(exitModuleBytes()),
    loaders: [
      ['a file path', () => wasmPath],
      ['a file: URL', () => pathToFileURL(wasmPath)],
      ['a Uint8Array', () => wasm],
      ['an ArrayBuffer', () => wasm.slice().buffer],
      ['a WebAssembly.Module', () => module],
      ['a Response', () => new Response(wasm, { headers: { 'content-type': 'application/wasm' } })],
      ['bytes that are not guard.wasm', () => new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 99]), { code: 'mrtr.config.invalid', message: /not a valid guard\.wasm/ }],
    ],
    defaultModule: 'loads',
    policy: policyInputs(o.policyBundle ?? env('MRTR_POLICY_BUNDLE')),
    log,
  };
}
