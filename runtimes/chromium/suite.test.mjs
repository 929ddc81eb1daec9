// The shared suite in headless Chromium (Debian's /usr/bin/chromium, driven
// by playwright-core): one node:test test per suite test, each run on the
// page over loopback.
import { test, after } from 'node:test';
import { readdirSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { serveStatic } from '../shared/static-server.mjs';
import { launch } from '../shared/chromium.mjs';
import { repoDir } from '../shared/fs-context.mjs';

const bundle = process.env.MRTR_POLICY_BUNDLE;
if (!bundle) throw new Error('MRTR_POLICY_BUNDLE is not set (run.sh builds it)');
const sha = process.env.MRTR_WASM_SHA256 || createHash('sha256').update(readFileSync(repoDir + 'wasm/guard.wasm')).digest('hex');
const vectorNames = readdirSync(repoDir + 'testdata/vectors').filter((f) => f.endsWith('.json')).sort();
const server = await serveStatic(repoDir, { '/policy-bundle.tar.gz': bundle });
const browser = await launch();
after(async () => {
  await browser.close();
  await server.close();
});
const { page } = browser;
page.on('console', (m) => console.log(`[page] ${m.text()}`));
page.on('pageerror', (e) => console.log(`[page error] ${e.message}`));
// The page cannot list a directory: the vector index comes from here.
await page.route('**/vectors-index.json', (route) => route.fulfill({ contentType: 'application/json', body: JSON.stringify(vectorNames) }));
await page.goto(`${server.url}/runtimes/chromium/page.html?sha256=${sha}`);
const { runtime, names } = await page.evaluate(() => window.mrtr.names());
console.log(`${runtime}; browser ${browser.version}`);
for (const name of names) {
  test(name, async () => {
    const r = await page.evaluate((n) => window.mrtr.run(n), name);
    if (!r.ok) throw new Error(r.error);
  });
}
