// Keys in the MRTR_KEYS format: PASERK k4.local keys separated by commas,
// spaces or new lines; lines starting with # are comments; the first key
// seals, every key opens. A Keyring never shows its keys: not in errors,
// not in util.inspect, not in JSON.stringify.

import { decode, encode } from './b64.js';
import { GuardError, codes } from './errors.js';

const PREFIX = 'k4.local.';
const INSPECT = Symbol.for('nodejs.util.inspect.custom');

function configError(message) {
  return new GuardError(codes.CONFIG_INVALID, message);
}

// checkKey validates a key's shape without echoing it.
function checkKey(k) {
  if (!k.startsWith(PREFIX)) return 'not a PASERK k4.local key';
  const raw = decode(k.slice(PREFIX.length));
  if (raw === null || raw.length !== 32) return 'a k4.local key holds 32 bytes in base64url without padding';
  return '';
}

// The keys of each keyring, reachable only from this package's modules
// (the package's exports map does not expose src/).
const secret = new WeakMap();

/** @internal the keys, for the configure envelope only */
export function revealKeys(k) {
  return secret.get(k);
}

export class Keyring {
  /** @param {string[]} keys already checked */
  constructor(keys) {
    secret.set(this, Object.freeze([...keys]));
    Object.freeze(this);
  }

  /** How many keys. */
  get size() {
    return secret.get(this).length;
  }

  toString() {
    return `Keyring(${this.size} keys, redacted)`;
  }

  toJSON() {
    return this.toString();
  }

  [INSPECT]() {
    return this.toString();
  }
}

/**
 * Reads keys in the MRTR_KEYS format. Throws a GuardError
 * (mrtr.config.invalid) that names the key by position, never by value.
 * @param {string} s
 */
export function parseKeys(s) {
  if (typeof s !== 'string') throw configError('mrtr: keys must be a string in the MRTR_KEYS format');
  const keys = [];
  for (const line of s.split('\n')) {
    if (line.trim().startsWith('#')) continue;
    for (const f of line.split(/[, \t\r]+/)) {
      if (f === '') continue;
      const bad = checkKey(f);
      if (bad) throw configError(`mrtr: key ${keys.length + 1}: ${bad}`);
      if (keys.includes(f)) throw configError(`mrtr: key ${keys.length + 1} is listed twice`);
      keys.push(f);
    }
  }
  if (keys.length === 0) throw configError('mrtr: no keys (want k4.local.… keys; `mrtr-wasm keygen` makes one)');
  return new Keyring(keys);
}

/**
 * A keyring from a Keyring, a string in the MRTR_KEYS format or an array of
 * k4.local strings.
 */
export function toKeyring(k) {
  if (k instanceof Keyring) return k;
  if (Array.isArray(k)) return parseKeys(k.join('\n'));
  if (typeof k === 'string') return parseKeys(k);
  throw configError('mrtr: no keys: pass keys (a Keyring, MRTR_KEYS text or an array of k4.local keys)');
}

/** A new random k4.local key, from crypto.getRandomValues (never a seam). */
export function generateKey() {
  const b = new Uint8Array(32);
  globalThis.crypto.getRandomValues(b);
  return PREFIX + encode(b);
}
