// The shared suite in Cloudflare's workerd, under `workerd test`: guard.wasm
// and the OPA policy.wasm are Wasm modules, compiled when the worker loads
// (workerd compiles no WebAssembly at run time); the vectors, policy cases
// and expected sha256 are bindings. gen-config.mjs names the modules: a
// bundler (wrangler) does the same for a deployed worker. (workerd resolves
// a bare specifier as a path relative to its importer, so the package is
// imported by its path here.)
import { suite, runAll } from '../shared/suite.mjs';
import * as api from '../node_modules/mrtr-wasm/index.js';
import GUARD from '../node_modules/mrtr-wasm/guard.wasm';
import EXIT_MODULE from '../exit.wasm';
import POLICY_WASM from '../policy/policy.wasm';
import opa from '../opa-wasm.mjs';

export default {
  async test(_ctrl, env) {
    const log = (l) => console.log(l);
    const bytes = new Uint8Array(env.GUARD_BYTES);
    const policy = env.POLICY_CASES;
    const ctx = {
      runtime: env.WORKERD_VERSION,
      wasm: bytes,
      module: GUARD,
      sha256: env.WASM_SHA256,
      vectors: env.VECTORS,
      exitModule: EXIT_MODULE,
      loaders: [
        ['a WebAssembly.Module binding', () => GUARD],
        ['a promise of the module binding', () => Promise.resolve(GUARD)],
        ['bytes (refused: no code generation at run time)', () => bytes, { code: 'mrtr.config.invalid', message: /compiles no WebAssembly at run time/ }],
        ['a Response (refused likewise)', () => new Response(bytes), { code: 'mrtr.config.invalid', message: /compiles no WebAssembly at run time/ }],
      ],
      defaultModule: 'refused',
      policy: {
        parts: { wasm: POLICY_WASM, data: env.POLICY_DATA },
        opa, // workerd resolves bare specifiers as paths: the module is passed in
        bundleRefused: new Uint8Array(env.POLICY_BUNDLE),
        cases: policy.cases,
        dataFiles: policy.dataFiles,
      },
      log,
      api,
    };
    const results = await runAll(suite(ctx), log);
    const failed = results.filter((r) => !r.ok);
    for (const f of failed) console.log(`--- ${f.name}\n${f.error}`);
    console.log(`workerd: ${results.length - failed.length} passed, ${failed.length} failed`);
    if (failed.length > 0) throw new Error(`${failed.length} of ${results.length} tests failed in workerd`);
  },
};
