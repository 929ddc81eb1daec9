// Turning caller values into JSON text for an envelope. Everything spliced
// into an envelope is exactly one JSON value (JSON.stringify of a value, or
// raw text that JSON.parse accepted whole), so a client cannot add members
// to the envelope (no envelope injection). The core then applies its own
// stricter checks (duplicate keys, UTF-8, depth, number range) and answers
// with their codes.

import { GuardError, codes } from './errors.js';

const RAW = Symbol('mrtr.rawJSON');
const fatalDecoder = new TextDecoder('utf-8', { fatal: true });

/**
 * Marks JSON text (or UTF-8 bytes) to be passed to the core as received,
 * for example a request body's `arguments` kept byte for byte. It is
 * checked to be exactly one JSON value before use.
 * @param {string | Uint8Array} text
 * @returns {import('../index.d.ts').RawJSON} opaque: only the core reads it
 */
export function rawJSON(text) {
  return /** @type {any} */ ({ [RAW]: text });
}

export function isRawJSON(v) {
  return v !== null && typeof v === 'object' && RAW in v;
}

/**
 * JSON text of v, or undefined when v is undefined.
 * @param {string} name for the error message
 * @param {unknown} v
 * @param {string} code the error code for bad JSON
 */
export function jsonText(name, v, code = codes.JSON_SYNTAX) {
  if (v === undefined) return undefined;
  if (isRawJSON(v)) {
    let t = v[RAW];
    if (t instanceof Uint8Array) {
      try {
        t = fatalDecoder.decode(t);
      } catch {
        throw new GuardError(codes.JSON_INVALID_UTF8, `${name} is not valid UTF-8`);
      }
    }
    if (typeof t !== 'string') throw new GuardError(code, `${name} is not valid JSON`);
    if (!t.isWellFormed()) throw new GuardError(codes.JSON_INVALID_UTF8, `${name} is not valid UTF-8`);
    try {
      JSON.parse(t);
    } catch {
      throw new GuardError(code, `${name} is not valid JSON`);
    }
    return t;
  }
  let t;
  try {
    t = JSON.stringify(v, finiteOnly);
  } catch {
    t = undefined;
  }
  if (typeof t !== 'string') throw new GuardError(code, `${name} is not valid JSON`);
  return t;
}

// finiteOnly refuses what JSON.stringify would quietly write as null
// (Infinity, NaN: a parsed 1e400 is Infinity), so one call cannot bind
// one value and its retry another.
function finiteOnly(_key, value) {
  if (typeof value === 'number' && !Number.isFinite(value)) throw new Error('not finite');
  return value;
}

/** A JSON string literal of s; s must be a string. */
export function jsonString(name, s) {
  if (typeof s !== 'string') throw new GuardError(codes.REQUEST_MALFORMED, `${name} must be a string`);
  return JSON.stringify(s);
}
