// Exactly once: the ledger behind guard.once(). A complete outcome carries
// an operation id (sealed in the state, the same in every round of one
// logical request). The first claim of that id runs the side effect and
// stores its result; a replay with the same answers gets the stored result;
// other answers under the same id are a conflict; concurrent duplicates
// wait for the first, within a bound. The store layout and semantics are
// those of the Go ledger (ledger/ledger.go), so Node and Go servers can
// share one Redis.

import { seams } from './seams.js';
import { GuardError, codes } from './errors.js';

/** Claim statuses, as the Go ledger names them. */
export const ClaimStatus = Object.freeze({
  ACQUIRED: 'acquired',
  IN_PROGRESS: 'in_progress',
  FINISHED: 'finished',
  CONFLICT: 'conflict',
});

/** Finish found the operation held or finished by another claim. */
export class LedgerLostError extends Error {
  constructor() {
    super('ledger: the claim was lost: another claim holds or finished the operation');
    this.name = 'LedgerLostError';
  }
}

const MAX_OP = 256;
const TOKEN_LEN = 32;

function checkOp(op) {
  if (typeof op !== 'string' || op === '' || op.length > MAX_OP) throw new Error('ledger: bad operation id or token');
}

function checkToken(token) {
  if (typeof token !== 'string' || token.length !== TOKEN_LEN) throw new Error('ledger: bad operation id or token');
}

function hex(bytes) {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

/** A claim token: 16 random bytes in hex. */
export function newToken() {
  const b = new Uint8Array(TOKEN_LEN / 2);
  globalThis.crypto.getRandomValues(b);
  return hex(b);
}

// --- the key of the answers -----------------------------------------------

const HEX64 = /^[0-9a-f]{64}$/;

/**
 * The key an operation is claimed with (64 hex): the guard core's answers
 * digest (guest/ABI.md, `answersDigest`), used as it is, so Node and Go
 * servers sharing one ledger, and two builds of guard.wasm, agree on "the
 * same answers". Takes an Outcome from guard.resume, or the digest itself.
 * @param {object | string} x
 */
export function fingerprint(x) {
  const d = typeof x === 'string' ? x : x?.answersDigest;
  if (typeof d !== 'string' || !HEX64.test(d)) {
    throw new GuardError(codes.NOT_COMPLETE, 'Once needs a complete outcome from resume (with its answers digest): act only when every answer is in');
  }
  return d;
}

// --- once ----------------------------------------------------------------

// The Go host's defaults (host/once.go).
const DEFAULT_WAIT_MS = 2_000;
const DEFAULT_LEASE_MS = 30_000;
const DEFAULT_MARGIN_MS = 60_000;
const DEFAULT_LEDGER_TIMEOUT_MS = 1_000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class LedgerTimeout extends Error {}

// Each ledger call is bounded: one that runs over fails closed.
function bounded(p, ms) {
  let t;
  return Promise.race([
    p,
    new Promise((_, reject) => {
      t = setTimeout(() => reject(new LedgerTimeout('ledger call timed out')), ms);
    }),
  ]).finally(() => clearTimeout(t));
}

// ledgerDown is the fail-closed answer: nothing ran, retry later. The
// cause goes into reason as a class only (a store's error text may name
// hosts or hold data).
function ledgerDown(err) {
  const m = String(err?.message ?? '');
  let reason = 'error';
  if (err instanceof LedgerTimeout) reason = 'timeout';
  else if (m.includes('ledger: full')) reason = 'full';
  else if (m.includes('ledger: closed')) reason = 'closed';
  else if (m.includes('bad operation id')) reason = 'bad_operation';
  return new GuardError(codes.LEDGER_UNAVAILABLE, 'the replay ledger is unavailable: nothing was done; retry later', { reason });
}

/**
 * The once() option name in ms, checked: a positive finite number, or the
 * default when not given. A lease of 0 or NaN is never live (duplicates
 * would run together), and a negative margin forgets an operation before
 * its states expire (a replay would run it again).
 * @param {Record<string, any>} o
 * @param {string} name
 * @param {number} def
 */
export function msOption(o, name, def) {
  const v = o[name];
  if (v === undefined) return def;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw new GuardError(codes.CONFIG_INVALID, `${name} must be a positive number of milliseconds`);
  }
  return v;
}

/**
 * Runs effect at most once for the outcome's operation, with the Go
 * host's semantics (host/once.go Guard.Once).
 * @param {object} ledger
 * @param {object} outcome a complete outcome from guard.resume
 * @param {(ctx: {operationId: string, signal: AbortSignal}) => unknown} effect
 * @param {{ttlSeconds: number, leaseMs?: number, waitMs?: number, marginMs?: number, ledgerTimeoutMs?: number}} o
 */
export async function runOnce(ledger, outcome, effect, o) {
  if (!outcome || outcome.status !== 'complete' || !outcome.operationId || !(Number.isSafeInteger(o.ttlSeconds) && o.ttlSeconds > 0)) {
    throw new GuardError(codes.NOT_COMPLETE, 'Once needs a complete outcome from resume (with its answers digest): act only when every answer is in');
  }
  if (typeof effect !== 'function') throw new GuardError(codes.INTERNAL, 'Once needs an effect');
  const op = outcome.operationId;
  const lease = msOption(o, 'leaseMs', DEFAULT_LEASE_MS);
  const timeout = msOption(o, 'ledgerTimeoutMs', DEFAULT_LEDGER_TIMEOUT_MS);
  const margin = msOption(o, 'marginMs', DEFAULT_MARGIN_MS);
  const wait = msOption(o, 'waitMs', DEFAULT_WAIT_MS);
  // Finished operations are remembered for as long as a state of them may
  // open (ttlSeconds: the core's rememberSeconds, from guard.once) plus a
  // margin for clock skew between instances.
  const ttlMs = o.ttlSeconds * 1000 + margin;
  const fp = fingerprint(outcome);
  const deadline = performance.now() + wait;
  for (let pause = 1; ; pause = Math.min(pause * 2, 50)) {
    const start = performance.now();
    let c;
    try {
      c = await bounded(ledger.claim(op, fp, lease), timeout);
    } catch (e) {
      throw ledgerDown(e);
    }
    switch (c?.status) {
      case ClaimStatus.ACQUIRED:
        return runClaimed(ledger, op, fp, c.token, start, lease, timeout, ttlMs, effect);
      case ClaimStatus.FINISHED:
        return { result: decodeResult(c.result), replay: true, operationId: op, recorded: true };
      case ClaimStatus.CONFLICT:
        throw new GuardError(codes.CONFLICT, 'this request was already carried out with other answers');
      case ClaimStatus.IN_PROGRESS:
        break;
      default:
        throw new GuardError(codes.INTERNAL, 'the ledger answered an unknown status');
    }
    const left = deadline - performance.now();
    if (left <= 0) throw new GuardError(codes.IN_PROGRESS, 'this request is being carried out; retry shortly');
    await sleep(Math.min(pause, left));
  }
}

async function runClaimed(ledger, op, fp, token, start, lease, timeout, ttlMs, effect) {
  // The effect's signal aborts when the claim's lease ends: an effect that
  // honours it cannot still run when another instance may take over.
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(new Error('the claim\'s lease ended')), Math.max(0, start + lease - performance.now()));
  let value;
  try {
    value = await effect({ operationId: op, signal: ac.signal });
  } catch (err) {
    // A failed effect frees the operation, so the user can try again.
    try {
      await bounded(ledger.release(op, token), timeout);
    } catch {
      // The lease expires by itself.
    }
    throw err;
  } finally {
    clearTimeout(timer);
  }
  // The effect ran: whatever happens now, the operation is finished in
  // the ledger, so that no retry runs it again. A result that is not JSON
  // (a BigInt, a function, a cycle) is recorded as null, and the caller
  // hears why.
  let text;
  try {
    text = JSON.stringify(value === undefined ? null : value);
  } catch {
    text = undefined;
  }
  const notJSON = typeof text !== 'string';
  if (notJSON) text = 'null';
  const result = JSON.parse(text);
  for (let attempt = 0; ; attempt++) {
    try {
      await bounded(ledger.finish(op, token, fp, text, ttlMs), timeout);
    } catch (e) {
      if (e instanceof LedgerLostError) {
        // The effect happened: answer with its result, and say why it
        // may not be the only run.
        return { result, replay: false, operationId: op, recorded: false, reason: 'lease_lost' };
      }
      if (attempt < 2) {
        await sleep(10 << (2 * attempt));
        continue;
      }
      return { result, replay: false, operationId: op, recorded: false, reason: 'not_recorded' };
    }
    if (notJSON) {
      throw new GuardError(codes.INTERNAL, 'the request was carried out, but its result is not JSON (a BigInt, a function or a cycle): it was recorded as null, and a retry will not run it again', { reason: 'result_not_json' });
    }
    return { result, replay: false, operationId: op, recorded: true };
  }
}

// Results are JSON text (what a Node effect returns, serialised). A result
// another runtime stored that is not JSON comes back as a string.
function decodeResult(r) {
  const t = typeof r === 'string' ? r : new TextDecoder().decode(r);
  try {
    return JSON.parse(t);
  } catch {
    return t;
  }
}

// --- the memory ledger ----------------------------------------------------

// What an entry costs besides its strings: the object, its map slot and
// heap item, roughly (as the Go ledger counts it).
const ENTRY_OVERHEAD = 160;

// utf8Length is the UTF-8 length of s, without encoding it.
function utf8Length(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/**
 * An in-process ledger, bounded in entries (default 100000), in bytes
 * (maxBytes, default 64 MiB: each entry's stored result, operation id and
 * token, plus ENTRY_OVERHEAD) and time. Full, it refuses new claims rather
 * than forget a live operation (forgetting one would run its effect
 * again); a finish always records, so it may go over by the results of
 * the claims in flight.
 */
export class MemoryLedger {
  #max;
  #maxBytes;
  #bytes = 0;
  #entries = new Map();
  #heap = []; // [expires, op], a binary min-heap on expires
  #closed = false;

  // Monotonic: leases and expiries live in this process only, and a step
  // of the wall clock must not end a lease while its effect runs.
  #now = () => performance.now();

  constructor(options = {}) {
    this.#max = options.maxEntries ?? 100_000;
    this.#maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
    const seam = /** @type {any} */ (options)[seams]; // tests' fake clock (src/seams.js)
    if (seam?.clock) this.#now = seam.clock;
  }

  #live(op, now) {
    const e = this.#entries.get(op);
    return e && now < e.expires ? e : undefined;
  }

  #set(op, e) {
    const r = e.result;
    e.cost = utf8Length(op) + e.token.length + (typeof r === 'string' ? utf8Length(r) : (r?.length ?? 0)) + ENTRY_OVERHEAD;
    const old = this.#entries.get(op);
    if (old) this.#bytes -= old.cost;
    this.#bytes += e.cost;
    this.#entries.set(op, e);
    heapPush(this.#heap, [e.expires, op]);
    if (this.#heap.length > 2 * this.#entries.size + 1024) {
      this.#heap = [...this.#entries].map(([k, v]) => [v.expires, k]).sort((a, b) => a[0] - b[0]);
    }
  }

  #sweep(now) {
    const h = this.#heap;
    while (h.length > 0 && h[0][0] <= now) {
      const [, op] = heapPop(h);
      const e = this.#entries.get(op);
      if (e && e.expires <= now) this.#delete(op, e);
    }
  }

  #delete(op, e) {
    this.#entries.delete(op);
    this.#bytes -= e.cost;
  }

  #check() {
    if (this.#closed) throw new Error('ledger: closed');
  }

  async claim(op, fp, leaseMs) {
    checkOp(op);
    this.#check();
    const now = this.#now();
    this.#sweep(now);
    const e = this.#live(op, now);
    if (e) {
      if (e.fp !== fp) return { status: ClaimStatus.CONFLICT };
      if (e.done) return { status: ClaimStatus.FINISHED, result: e.result };
      return { status: ClaimStatus.IN_PROGRESS };
    }
    if (!this.#entries.has(op) && this.#entries.size >= this.#max) throw new Error('ledger: full: too many live operations');
    const token = newToken();
    if (this.#bytes + utf8Length(op) + token.length + ENTRY_OVERHEAD > this.#maxBytes) {
      // Expired entries went in the sweep; the rest are live.
      throw new Error("ledger: full: the byte budget is taken by live operations' results");
    }
    this.#set(op, { done: false, token, fp, expires: now + leaseMs });
    return { status: ClaimStatus.ACQUIRED, token };
  }

  async finish(op, token, fp, result, ttlMs) {
    checkOp(op);
    checkToken(token);
    this.#check();
    const now = this.#now();
    const e = this.#live(op, now);
    if (e && e.token !== token) throw new LedgerLostError();
    if (!e && !this.#entries.has(op) && this.#entries.size >= this.#max) {
      this.#sweep(now);
      if (this.#entries.size >= this.#max) throw new Error('ledger: full: too many live operations');
    }
    this.#set(op, { done: true, token, fp, result, expires: now + ttlMs });
  }

  async release(op, token) {
    checkOp(op);
    this.#check();
    const e = this.#entries.get(op);
    if (e && !e.done && e.token === token) this.#delete(op, e);
  }

  async get(op) {
    checkOp(op);
    this.#check();
    const e = this.#live(op, this.#now());
    if (!e) return { state: 'absent' };
    return e.done ? { state: 'done', fingerprint: e.fp, result: e.result } : { state: 'pending', fingerprint: e.fp };
  }

  /** Live entries. */
  get size() {
    this.#sweep(this.#now());
    return this.#entries.size;
  }

  /** What the live entries count against maxBytes. */
  get bytes() {
    this.#sweep(this.#now());
    return this.#bytes;
  }

  async close() {
    this.#closed = true;
    this.#entries.clear();
    this.#bytes = 0;
    this.#heap = [];
  }
}

function heapPush(h, item) {
  h.push(item);
  let i = h.length - 1;
  while (i > 0) {
    const p = (i - 1) >> 1;
    if (h[p][0] <= h[i][0]) break;
    [h[p], h[i]] = [h[i], h[p]];
    i = p;
  }
}

function heapPop(h) {
  const top = h[0];
  const last = h.pop();
  if (h.length > 0) {
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && h[l][0] < h[m][0]) m = l;
      if (r < h.length && h[r][0] < h[m][0]) m = r;
      if (m === i) break;
      [h[m], h[i]] = [h[i], h[m]];
      i = m;
    }
  }
  return top;
}
