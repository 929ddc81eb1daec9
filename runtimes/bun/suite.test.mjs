// The shared suite in Bun (bun test, JavaScriptCore).
import { test } from 'bun:test';
import * as api from 'mrtr-wasm';
import { suite } from '../shared/suite.mjs';
import { fsContext } from '../shared/fs-context.mjs';

const ctx = await fsContext(`bun ${Bun.version} (JavaScriptCore)`, (l) => console.log(l));
for (const t of suite({ ...ctx, api })) test(t.name, t.fn, 120_000);
