// Test seams: a fake clock, fake randomness and a handle on the running
// instance. They are reached only through this symbol, which index.js
// does not export and package.json's "exports" does not expose, so no
// application can weaken the guard's nonces; the package's own tests
// import it by path:
//
//   import { seams } from '../src/seams.js';
//   createGuard({ keys, [seams]: { clock: () => t, random: (b) => b.fill(0), testHooks: true } });
//
// collectBetweenCalls: false leaves the module to collect its garbage
// inside calls, for the benchmark that compares the two.

export const seams = Symbol('mrtr-wasm.seams');
