// The shared suite in Deno (deno test).
import * as api from 'mrtr-wasm';
import { suite } from '../shared/suite.mjs';
import { fsContext } from '../shared/fs-context.mjs';

const ctx = await fsContext(`deno ${Deno.version.deno} (V8 ${Deno.version.v8})`, (l) => console.log(l));
for (const t of suite({ ...ctx, api })) Deno.test(t.name, t.fn);
