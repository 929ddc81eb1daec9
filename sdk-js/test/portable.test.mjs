// The suite every runtime runs (../runtimes/shared/suite.mjs), here in Node
// on this package's own source: the WASI shim import by import, proc_exit,
// every shared vector, loading from every source, the guard, the policy.
// runtimes/run.sh runs the same suite in Deno, Bun, workerd and Chromium.
import { test } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as api from '../index.js';
import { suite } from '../../runtimes/shared/suite.mjs';
import { fsContext } from '../../runtimes/shared/fs-context.mjs';
import { buildPolicyBundle, sdkDir } from './helpers.mjs';

const dir = mkdtempSync(join(tmpdir(), 'mrtr-portable-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const policyBundle = join(dir, 'bundle.tar.gz');
buildPolicyBundle(policyBundle);

const ctx = await fsContext(`node ${process.version}`, (l) => console.log(l), { wasmPath: join(sdkDir, 'guard.wasm'), policyBundle });
for (const t of suite({ ...ctx, api })) test(t.name, t.fn);
