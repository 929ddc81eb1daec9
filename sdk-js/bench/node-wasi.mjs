// The former Node platform layer, kept for the comparison benchmark only
// (bench/wasi.bench.mjs): WASI preview1 from node:wasi and randomness from
// node:crypto. The package itself uses src/platform.js (the portable WASI
// shim) everywhere, Node included: it measured no slower (see the README).

import { openSync } from 'node:fs';
import { randomFillSync } from 'node:crypto';

let WASI;
let devNull;
const POOL_SIZE = 4096;
const pool = new Uint8Array(POOL_SIZE);
let poolAt = POOL_SIZE;

// node:wasi prints a one-time ExperimentalWarning when it is loaded. It is
// not actionable for users of this package (we use the stable preview1
// surface only), so it is dropped while, and only while, the module loads.
async function loadWASI() {
  if (WASI) return WASI;
  const emit = process.emitWarning;
  process.emitWarning = function (w, ...rest) {
    const m = typeof w === 'string' ? w : w?.message;
    if (typeof m === 'string' && m.startsWith('WASI is an experimental feature')) return;
    return emit.call(this, w, ...rest);
  };
  try {
    ({ WASI } = await import('node:wasi'));
  } finally {
    process.emitWarning = emit;
  }
  return WASI;
}

export const nodePlatform = {
  name: 'node:wasi',

  async init() {
    await loadWASI();
    // A guest panic prints to stderr and may hold request data: it goes
    // to /dev/null, as in the Go host.
    devNull ??= openSync('/dev/null', 'w');
  },

  createWasi() {
    // No args, no environment, no preopened directories.
    const wasi = new WASI({ version: 'preview1', args: [], env: {}, returnOnExit: true, stdin: devNull, stdout: devNull, stderr: devNull });
    return {
      imports: wasi.getImportObject(),
      start(instance) {
        wasi.initialize(instance);
      },
    };
  },

  // Every call gets fresh bytes, never reused; they are drawn from a 4 KiB
  // buffer that randomFillSync refills when it runs out, since one
  // randomFillSync call costs microseconds whatever its size.
  randomFill(b) {
    if (b.length > POOL_SIZE) {
      randomFillSync(b);
      return;
    }
    if (poolAt + b.length > POOL_SIZE) {
      randomFillSync(pool);
      poolAt = 0;
    }
    b.set(pool.subarray(poolAt, poolAt + b.length));
    pool.fill(0, poolAt, poolAt + b.length);
    poolAt += b.length;
  },
};
