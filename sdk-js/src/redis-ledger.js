// The Redis ledger, over a Redis client the application already has. One
// string key per operation, exactly as the Go ledger writes it
// (ledger/redis.go), so Node and Go servers share one Redis:
//
//   prefix + op = state (1 byte: 'p' pending, 'd' done) + token (32 hex)
//                 + fingerprint (64 hex) + result (done only)
//
// A claim is SET NX PX lease: the key expires by itself when its owner
// dies. Finish and Release are Lua scripts that check the token, so a
// stale owner never overwrites another claim or result.
//
// The client is the application's: node-redis (`client.sendCommand(args)`),
// ioredis (`redis.call(cmd, ...args)`) or anything with one of those two
// methods. Connection, TLS, authentication and reconnection stay the
// client's job; this package has no Redis dependency.

import { ClaimStatus, LedgerLostError, newToken } from './ledger.js';

// The same scripts, byte for byte, as the Go ledger: one SHA in the
// server's script cache for both.
const FINISH = `
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 2, 33) ~= ARGV[1] then
	return 0
end
redis.call('SET', KEYS[1], 'd' .. ARGV[1] .. ARGV[2] .. ARGV[3], 'PX', ARGV[4])
return 1`;

const RELEASE = `
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, 1) == 'p' and string.sub(v, 2, 33) == ARGV[1] then
	redis.call('DEL', KEYS[1])
	return 1
end
return 0`;

const TOKEN_LEN = 32;
const HDR_LEN = 1 + TOKEN_LEN + 64;
const DEFAULT_PREFIX = 'mrtr:op:';

async function sha1hex(s) {
  const d = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-1', new TextEncoder().encode(s)));
  return Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * Wraps a node-redis or ioredis client (or anything with sendCommand(args)
 * or call(...args)) as a function that sends one command.
 */
export function redisCommand(client) {
  if (typeof client === 'function') return client;
  if (client && typeof client.sendCommand === 'function') return (args) => client.sendCommand(args);
  if (client && typeof client.call === 'function') return (args) => client.call(...args);
  throw new TypeError('redisLedger needs a Redis client with sendCommand(args) (node-redis) or call(...args) (ioredis)');
}

function msArg(ms) {
  return String(Math.max(1, Math.floor(ms)));
}

function str(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  if (v instanceof Uint8Array) return new TextDecoder().decode(v);
  return String(v);
}

export class RedisLedger {
  #cmd;
  #prefix;
  #sha = {};

  /**
   * @param {object | ((args: string[]) => Promise<unknown>)} client
   * @param {{prefix?: string}} [opts] key prefix, default "mrtr:op:" (the Go default)
   */
  constructor(client, { prefix = DEFAULT_PREFIX } = {}) {
    this.#cmd = redisCommand(client);
    this.#prefix = prefix;
  }

  #key(op) {
    if (typeof op !== 'string' || op === '' || op.length > 256) throw new Error('ledger: bad operation id or token');
    return this.#prefix + op;
  }

  // EVALSHA, falling back to EVAL when the server does not know the script
  // (first use, or after a restart or SCRIPT FLUSH).
  async #script(name, src, keys, args) {
    this.#sha[name] ??= await sha1hex(src);
    try {
      return await this.#cmd(['EVALSHA', this.#sha[name], String(keys.length), ...keys, ...args]);
    } catch (e) {
      if (!String(e?.message ?? e).includes('NOSCRIPT')) throw e;
      return this.#cmd(['EVAL', src, String(keys.length), ...keys, ...args]);
    }
  }

  async claim(op, fp, leaseMs) {
    const k = this.#key(op);
    const token = newToken();
    for (let attempt = 0; ; attempt++) {
      const ok = await this.#cmd(['SET', k, 'p' + token + fp, 'NX', 'PX', msArg(leaseMs)]);
      if (ok !== null && ok !== undefined) return { status: ClaimStatus.ACQUIRED, token };
      const v = str(await this.#cmd(['GET', k]));
      if (v === null) {
        // Released or expired in between: try again.
        if (attempt < 3) continue;
        return { status: ClaimStatus.IN_PROGRESS };
      }
      if (v.length < HDR_LEN) throw new Error('ledger: redis: malformed entry');
      if (v.slice(1 + TOKEN_LEN, HDR_LEN) !== fp) return { status: ClaimStatus.CONFLICT };
      if (v[0] === 'd') return { status: ClaimStatus.FINISHED, result: v.slice(HDR_LEN) };
      if (v.slice(1, 1 + TOKEN_LEN) === token) return { status: ClaimStatus.ACQUIRED, token };
      return { status: ClaimStatus.IN_PROGRESS };
    }
  }

  async finish(op, token, fp, result, ttlMs) {
    const n = await this.#script('finish', FINISH, [this.#key(op)], [token, fp, result, msArg(ttlMs)]);
    if (Number(n) !== 1) throw new LedgerLostError();
  }

  async release(op, token) {
    await this.#script('release', RELEASE, [this.#key(op)], [token]);
  }

  /**
   * @param {string} op
   * @returns {Promise<import('../index.d.ts').LedgerEntry>}
   */
  async get(op) {
    const v = str(await this.#cmd(['GET', this.#key(op)]));
    if (v === null) return { state: 'absent' };
    if (v.length < HDR_LEN) throw new Error('ledger: redis: malformed entry');
    const fingerprint = v.slice(1 + TOKEN_LEN, HDR_LEN);
    return v[0] === 'd' ? { state: 'done', fingerprint, result: v.slice(HDR_LEN) } : { state: 'pending', fingerprint };
  }

  async ping() {
    await this.#cmd(['PING']);
  }
}

/** A Redis ledger over the application's Redis client. */
export function redisLedger(client, opts) {
  return new RedisLedger(client, opts);
}
