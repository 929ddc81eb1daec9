// The fingerprint an operation is claimed with: the Go host's
// answersFingerprint (host/once.go), byte for byte, so Node and Go servers
// sharing one ledger agree on "the same answers". It is a SHA-256 over
//
//   "mrtr-wasm/answers/v1\0"
//   then per answer key, in byte order of the key:
//     uvarint(len(key)) key  uint32be(len(value)) canonical(value)
//
// where canonical(value) is the answer's JSON as the guest wrote it, with
// every object's members sorted by their key literal (bytes, stable);
// scalars stay byte for byte. The guest's JSON is compact and its strings
// canonical, so only member order can differ between equal answers.

const encoder = new TextEncoder();

/** Where an Outcome keeps the guest's response text (for the fingerprint). */
export const RESPONSE_TEXT = Symbol('mrtr-wasm.responseText');
const PREFIX = encoder.encode('mrtr-wasm/answers/v1\0');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

function compareBytes(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

class Scan {
  constructor(b) {
    this.b = b;
    this.i = 0;
  }

  eat(c) {
    if (this.i < this.b.length && this.b[this.i] === c) {
      this.i++;
      return true;
    }
    return false;
  }

  // A string literal, quotes included, as a subarray; null if malformed.
  str() {
    const b = this.b;
    if (this.i >= b.length || b[this.i] !== QUOTE) return null;
    const start = this.i;
    for (this.i++; this.i < b.length; this.i++) {
      if (b[this.i] === BACKSLASH) this.i++;
      else if (b[this.i] === QUOTE) {
        this.i++;
        return b.subarray(start, this.i);
      }
    }
    return null;
  }

  scalar() {
    const b = this.b;
    const start = this.i;
    while (this.i < b.length) {
      const c = b[this.i];
      if (c === 0x2c || c === 0x7d || c === 0x5d || c === 0x3a || c === 0x7b || c === 0x5b || c === QUOTE) break;
      this.i++;
    }
    return this.i > start ? b.subarray(start, this.i) : null;
  }

  // canon appends the canonical form of the next value to out (an array
  // of byte chunks); false when the JSON does not scan.
  canon(out) {
    const b = this.b;
    if (this.i >= b.length) return false;
    const c = b[this.i];
    if (c === 0x7b) {
      this.i++;
      if (this.eat(0x7d)) {
        out.push(encoder.encode('{}'));
        return true;
      }
      const members = [];
      for (;;) {
        const k = this.str();
        if (!k || !this.eat(0x3a)) return false;
        const v = [];
        if (!this.canon(v)) return false;
        members.push({ k, v });
        if (this.eat(0x7d)) break;
        if (!this.eat(0x2c)) return false;
      }
      // A stable sort on the key literal's bytes, as Go's SortStableFunc.
      members.sort((x, y) => compareBytes(x.k, y.k));
      out.push(encoder.encode('{'));
      members.forEach((m, i) => {
        if (i > 0) out.push(encoder.encode(','));
        out.push(m.k, encoder.encode(':'), ...m.v);
      });
      out.push(encoder.encode('}'));
      return true;
    }
    if (c === 0x5b) {
      this.i++;
      out.push(encoder.encode('['));
      if (this.eat(0x5d)) {
        out.push(encoder.encode(']'));
        return true;
      }
      for (;;) {
        if (!this.canon(out)) return false;
        if (this.eat(0x5d)) {
          out.push(encoder.encode(']'));
          return true;
        }
        if (!this.eat(0x2c)) return false;
        out.push(encoder.encode(','));
      }
    }
    if (c === QUOTE) {
      const s = this.str();
      if (!s) return false;
      out.push(s);
      return true;
    }
    const s = this.scalar();
    if (!s) return false;
    out.push(s);
    return true;
  }
}

function concat(chunks) {
  let n = 0;
  for (const c of chunks) n += c.length;
  const r = new Uint8Array(n);
  let o = 0;
  for (const c of chunks) {
    r.set(c, o);
    o += c.length;
  }
  return r;
}

function canonicalValue(raw) {
  const s = new Scan(raw);
  const out = [];
  if (!s.canon(out) || s.i !== raw.length) return raw;
  return concat(out);
}

function uvarint(n) {
  const r = [];
  while (n >= 0x80) {
    r.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  r.push(n);
  return Uint8Array.from(r);
}

// The members of a compact JSON object as [decoded key, raw value bytes].
function members(raw) {
  const s = new Scan(raw);
  const out = [];
  if (!s.eat(0x7b)) throw new TypeError('answers must be a JSON object');
  if (s.eat(0x7d)) return out;
  for (;;) {
    const k = s.str();
    if (!k || !s.eat(0x3a)) throw new TypeError('answers: bad JSON');
    const start = s.i;
    if (!s.canon([])) throw new TypeError('answers: bad JSON');
    out.push([JSON.parse(new TextDecoder().decode(k)), raw.subarray(start, s.i)]);
    if (s.eat(0x7d)) return out;
    if (!s.eat(0x2c)) throw new TypeError('answers: bad JSON');
  }
}

/**
 * The bytes Go hashes for answers given as the guest's JSON text (the
 * `answers` member of a resume response).
 * @param {string} answersJSON
 */
export function fingerprintInput(answersJSON) {
  const byKey = new Map();
  for (const [k, v] of members(encoder.encode(answersJSON))) byKey.set(k, v); // Go's map: the last wins
  const keys = [...byKey.keys()].map((k) => [k, encoder.encode(k)]).sort((x, y) => compareBytes(x[1], y[1]));
  const chunks = [PREFIX];
  for (const [k, kb] of keys) {
    const v = canonicalValue(byKey.get(k));
    const len = new Uint8Array(4);
    new DataView(len.buffer).setUint32(0, v.length);
    chunks.push(uvarint(kb.length), kb, len, v);
  }
  return concat(chunks);
}

/**
 * The raw JSON text of a top-level member of a compact JSON object (a
 * guest response), or undefined.
 * @param {string} text
 * @param {string} name
 */
export function rawMember(text, name) {
  const b = encoder.encode(text);
  const s = new Scan(b);
  if (!s.eat(0x7b)) return undefined;
  const want = encoder.encode(JSON.stringify(name));
  for (;;) {
    const k = s.str();
    if (!k || !s.eat(0x3a)) return undefined;
    const start = s.i;
    if (!s.canon([])) return undefined;
    if (compareBytes(k, want) === 0) return new TextDecoder().decode(b.subarray(start, s.i));
    if (!s.eat(0x2c)) return undefined;
  }
}
