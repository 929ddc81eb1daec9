// index.d.ts is hand-written: it must declare exactly what index.js
// exports, type a real handler under tsc --strict, refuse misuse
// (misuse.ts: @ts-expect-error on each line), and match the code: tsc
// with checkJs over src/ checks each implementation against its
// declaration (conforms.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as api from '../index.js';
import { sdkDir } from './helpers.mjs';

test('index.d.ts declares every runtime export, and nothing that is not exported', () => {
  const dts = readFileSync(join(sdkDir, 'index.d.ts'), 'utf8');
  const declared = new Set([...dts.matchAll(/^export (?:declare )?(?:function|const|class) (\w+)/gm)].map((m) => m[1]));
  const runtime = new Set(Object.keys(api));
  assert.deepEqual([...runtime].filter((n) => !declared.has(n)).sort(), [], 'exported but not declared');
  assert.deepEqual([...declared].filter((n) => !runtime.has(n)).sort(), [], 'declared but not exported');
});

const tsc = join(sdkDir, 'node_modules', 'typescript', 'bin', 'tsc');

test('tsc --strict accepts a handler written against the declarations, and refuses misuse', () => {
  execFileSync(process.execPath, [tsc, '-p', join(sdkDir, 'test', 'types', 'tsconfig.json')], { stdio: 'inherit' });
});

test('tsc --noEmit with checkJs: src/ type-checks and matches index.d.ts', () => {
  execFileSync(process.execPath, [tsc, '-p', join(sdkDir, 'test', 'types', 'tsconfig.checkjs.json')], { stdio: 'inherit' });
});
