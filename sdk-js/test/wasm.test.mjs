// The guard.wasm this package ships is the Go host's, byte for byte, and
// a raw instance of it gives byte-identical answers to every shared vector.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoDir, sdkDir, vectorFiles, caseBytes } from './helpers.mjs';
import { webPlatform, loadModule } from '../src/platform.js';
import { WasmInstance } from '../src/engine.js';

const sha256 = (b) => createHash('sha256').update(b).digest('hex');

test('sdk-js/guard.wasm is byte-identical to the Go host wasm/guard.wasm', () => {
  const ours = readFileSync(join(sdkDir, 'guard.wasm'));
  const go = readFileSync(join(repoDir, 'wasm', 'guard.wasm'));
  console.log(`guard.wasm sha256 ${sha256(ours)} (sdk-js), ${sha256(go)} (wasm/, Go host); ${ours.length} bytes`);
  assert.equal(sha256(ours), sha256(go), 'sdk-js/guard.wasm is stale: run `npm run sync-wasm`');
  assert.ok(ours.equals(go));
});

test('every shared vector gives the exact response bytes through the WASI shim', async () => {
  const module = await loadModule(join(sdkDir, 'guard.wasm'));
  const decoder = new TextDecoder();
  let total = 0;
  const files = vectorFiles();
  assert.ok(files.length >= 6, 'vector files missing');
  for (const { name, file } of files) {
    // One fresh instance per file, as host/vectors_test.go does.
    const inst = await WasmInstance.create(module, webPlatform);
    for (const c of file.cases) {
      const got = decoder.decode(inst.call(caseBytes(c)));
      assert.equal(got, c.response, `${name} / ${c.name}`);
      const r = JSON.parse(got);
      assert.equal(r.ok ?? false, c.expect.ok ?? false, `${name} / ${c.name}: ok`);
      if (c.expect.code) assert.equal(r.error.code, c.expect.code, `${name} / ${c.name}: code`);
      if (c.expect.reason) assert.equal(r.error.reason, c.expect.reason, `${name} / ${c.name}: reason`);
      if (c.expect.status) assert.equal(r.status, c.expect.status, `${name} / ${c.name}: status`);
      total++;
    }
  }
  console.log(`${total} vector cases in ${files.length} files: byte-identical in Node`);
});
