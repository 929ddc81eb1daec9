// The shared suite in Node (node:test), through the WASI shim.
import { test } from 'node:test';
import * as api from 'mrtr-wasm';
import { suite } from '../shared/suite.mjs';
import { fsContext } from '../shared/fs-context.mjs';

const ctx = await fsContext(`node ${process.version}`, (l) => console.log(l));
for (const t of suite({ ...ctx, api })) test(t.name, t.fn);
