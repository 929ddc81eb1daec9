// Compiled by test/types.test.mjs with checkJs: each implementation in
// src/ (its JSDoc and inferred types) must be assignable to what
// index.d.ts declares for it, so the hand-written declarations cannot
// drift from the code unnoticed.
import type * as D from 'mrtr-wasm';
import * as errors from '../../src/errors.js';
import * as guard from '../../src/guard.js';
import * as json from '../../src/json.js';
import * as keys from '../../src/keys.js';
import * as ledger from '../../src/ledger.js';
import * as policy from '../../src/policy.js';
import * as redis from '../../src/redis-ledger.js';
import * as wasi from '../../src/wasi.js';
import * as platform from '../../src/platform.js';

export const checks: unknown[] = [
  guard.form satisfies typeof D.form,
  guard.url satisfies typeof D.url,
  guard.sampling satisfies typeof D.sampling,
  guard.roots satisfies typeof D.roots,
  guard.isRetry satisfies typeof D.isRetry,
  guard.Status satisfies typeof D.Status,
  json.rawJSON satisfies typeof D.rawJSON,
  keys.parseKeys satisfies typeof D.parseKeys,
  keys.generateKey satisfies typeof D.generateKey,
  errors.codes satisfies typeof D.codes,
  ledger.ClaimStatus satisfies typeof D.ClaimStatus,
  ledger.fingerprint satisfies typeof D.fingerprint,
  redis.redisLedger satisfies typeof D.redisLedger,
  policy.policyFromBundle satisfies typeof D.policyFromBundle,
  policy.ASK_ENTRYPOINT satisfies typeof D.ASK_ENTRYPOINT,
  policy.RESUME_ENTRYPOINT satisfies typeof D.RESUME_ENTRYPOINT,
  wasi.wasiShim satisfies typeof D.wasiShim,
  platform.loadModule satisfies typeof D.loadModule,
];
