// The resume benchmark in Node, Deno or Bun: the installed package and its
// guard.wasm. Prints one JSON line.
//   node|deno run --allow-read|bun bench/fs-run.mjs N WARM
import * as api from 'mrtr-wasm';
import { benchResume } from '../shared/bench-core.mjs';

const [n, warm] = (globalThis.Deno?.args ?? globalThis.process.argv.slice(2)).map(Number);
const runtime = globalThis.Deno
  ? `Deno ${Deno.version.deno} (V8 ${Deno.version.v8})`
  : globalThis.Bun
    ? `Bun ${Bun.version} (JavaScriptCore)`
    : `Node ${process.version} (V8 ${process.versions.v8})`;
const module = await api.loadModule(new URL('../node_modules/mrtr-wasm/guard.wasm', import.meta.url));
console.log(JSON.stringify({ runtime, ...(await benchResume(api, module, { n, warm })) }));
