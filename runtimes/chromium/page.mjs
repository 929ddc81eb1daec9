// The shared suite on a page: the installed package through an import map,
// guard.wasm fetched, the policy bundle fetched and opened with opa-wasm's
// browser build. The driver calls window.mrtr.run(name) per test.
import * as api from 'mrtr-wasm';
import { suite, exitModuleBytes } from '../shared/suite.mjs';

const get = async (path) => {
  const r = await fetch(path);
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r;
};
const json = async (path) => (await get(path)).json();

async function context() {
  const q = new URLSearchParams(location.search);
  const wasmURL = new URL('/runtimes/node_modules/mrtr-wasm/guard.wasm', location.href);
  const wasm = new Uint8Array(await (await get(wasmURL)).arrayBuffer());
  const module = await WebAssembly.compile(wasm);
  const names = await json('/vectors-index.json');
  const vectors = await Promise.all(names.map(async (name) => ({ name, file: await json(`/testdata/vectors/${name}`) })));
  const cases = await json('/testdata/policy/cases.json');
  const dataFiles = {};
  for (const p of new Set([...cases.cases.map((c) => c.data), 'policies/data/demo.json'])) dataFiles[p] = await json(`/${p}`);
  return {
    runtime: `Chromium ${navigator.userAgent.match(/Chrome\/([\d.]+)/)?.[1]} (page, main thread)`,
    wasm,
    module,
    sha256: q.get('sha256'),
    vectors,
    exitModule: await WebAssembly.compile(exitModuleBytes()),
    loaders: [
      ['a URL (fetched)', () => wasmURL],
      ['a fetch Response', () => fetch(wasmURL)],
      ['a Uint8Array', () => wasm],
      ['an ArrayBuffer', () => wasm.slice().buffer],
      ['a WebAssembly.Module', () => module],
      ['a file path (no file system here)', () => '/tmp/guard.wasm', { code: 'mrtr.config.invalid', message: /no file system/ }],
      ['a URL that is not found', () => new URL('/nothing/guard.wasm', location.href), { code: 'mrtr.config.invalid', message: /HTTP 404/ }],
    ],
    defaultModule: 'loads',
    policy: { bundle: new Uint8Array(await (await get('/policy-bundle.tar.gz')).arrayBuffer()), cases, dataFiles },
    log: (l) => console.log(l),
    api,
  };
}

const ready = (async () => {
  const ctx = await context();
  const tests = suite(ctx);
  return { ctx, tests };
})();

window.mrtr = {
  async names() {
    const { ctx, tests } = await ready;
    return { runtime: ctx.runtime, names: tests.map((t) => t.name) };
  },
  async run(name) {
    const { tests } = await ready;
    const t = tests.find((x) => x.name === name);
    try {
      await t.fn();
      return { ok: true };
    } catch (e) {
      return { ok: false, error: `${e?.name}: ${e?.message}\n${e?.stack ?? ''}` };
    }
  },
};
