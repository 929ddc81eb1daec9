// The published package works on its own: npm pack, install the tarball in
// an empty folder, and run an ask and a resume there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoDir, sdkDir } from './helpers.mjs';

const npm = (args, cwd) => execFileSync('npm', args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' } });

test('npm pack, install the tarball in a temporary folder, resume there', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mrtr-pack-'));
  try {
    const [info] = JSON.parse(npm(['pack', '--json', '--pack-destination', dir], sdkDir));
    const files = info.files.map((f) => f.path).sort();
    assert.deepEqual(files.filter((f) => !f.startsWith('src/')), ['LICENSE', 'NOTICE', 'README.md', 'guard.wasm', 'index.d.ts', 'index.js', 'package.json']);
    assert.ok(files.includes('src/guard.js') && files.includes('src/platform.js') && files.includes('src/wasi.js'));
    assert.ok(!files.some((f) => f.startsWith('bench/')), 'the node:wasi comparison layer is not shipped');
    const app = join(dir, 'app');
    execFileSync('mkdir', [app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    npm(['install', '--no-package-lock', '--ignore-scripts', join(dir, info.filename)], app);
    const installed = readFileSync(join(app, 'node_modules', 'mrtr-wasm', 'guard.wasm'));
    const sha = (b) => createHash('sha256').update(b).digest('hex');
    assert.equal(sha(installed), sha(readFileSync(join(repoDir, 'wasm', 'guard.wasm'))), 'the tarball ships the Go host module');
    for (const f of ['LICENSE', 'NOTICE']) {
      assert.equal(readFileSync(join(app, 'node_modules', 'mrtr-wasm', f), 'utf8'), readFileSync(join(repoDir, f), 'utf8'), `the tarball's ${f} is the repository's`);
    }
    const meta = JSON.parse(readFileSync(join(app, 'node_modules', 'mrtr-wasm', 'package.json'), 'utf8'));
    assert.equal(meta.license, 'Apache-2.0');
    assert.match(meta.repository.url, /github\.com\/mrtr-wasm\/mrtr-wasm/);
    assert.ok(meta.homepage && meta.bugs.url, 'homepage and bugs are set');
    writeFileSync(
      join(app, 'main.mjs'),
      `import { createGuard, form, generateKey } from 'mrtr-wasm';
const g = await createGuard({ keys: generateKey(), audience: 'pack.example' });
const req = { principal: 'ann', method: 'tools/call', target: 'book', arguments: {}, capabilities: { elicitation: {} } };
const schema = { type: 'object', properties: { email: { type: 'string', format: 'email' } }, required: ['email'] };
const { requestState } = await g.ask(req, [form('contact', 'Email?', schema)]);
const out = await g.resume({ ...req, requestState, inputResponses: { contact: { action: 'accept', content: { email: 'ann@example.com' } } } });
console.log(JSON.stringify({ status: out.status, email: out.content('contact').email }));
`,
    );
    const r = execFileSync(process.execPath, ['main.mjs'], { cwd: app, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    assert.deepEqual(JSON.parse(r), { status: 'complete', email: 'ann@example.com' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
