// Copies the Go host's guard.wasm (../wasm/guard.wasm) into the package,
// so the npm tarball ships the very bytes the Go host embeds.
import { copyFileSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';

const src = fileURLToPath(new URL('../../wasm/guard.wasm', import.meta.url));
const dst = fileURLToPath(new URL('../guard.wasm', import.meta.url));
copyFileSync(src, dst);
const sha = createHash('sha256').update(readFileSync(dst)).digest('hex');
console.log(`guard.wasm synced from ../wasm/guard.wasm: sha256 ${sha}`);
