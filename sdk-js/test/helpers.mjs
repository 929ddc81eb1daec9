// Shared helpers for the tests.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from 'redis';

export const sdkDir = fileURLToPath(new URL('..', import.meta.url));
export const repoDir = fileURLToPath(new URL('../..', import.meta.url));
export const vectorsDir = join(repoDir, 'testdata', 'vectors');

// The PASETO v4 test key 707172…8f, as the Go vectors use it.
export const keyA = 'k4.local.' + Buffer.from(Array.from({ length: 32 }, (_, i) => 0x70 + i)).toString('base64url');

export const contactSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Your name', minLength: 1 },
    email: { type: 'string', title: 'Work email', format: 'email' },
  },
  required: ['name', 'email'],
};

export function baseRequest(over = {}) {
  return {
    principal: 'alice',
    method: 'tools/call',
    target: 'book_demo_call',
    arguments: { topic: 'pricing' },
    capabilities: { elicitation: { form: {}, url: {} } },
    ...over,
  };
}

/** The request bytes of a vector case (host/vectors_gen_test.go vecCase.bytes). */
export function caseBytes(c) {
  if (c.requestBase64) return new Uint8Array(Buffer.from(c.requestBase64, 'base64'));
  if (c.requestRepeat) {
    const r = c.requestRepeat;
    return r.prefix + r.fill.repeat(r.count) + r.suffix;
  }
  return c.request ?? '';
}

export function vectorFiles() {
  return readdirSync(vectorsDir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => ({ name: f, file: JSON.parse(readFileSync(join(vectorsDir, f), 'utf8')) }));
}

let goHelper;
let goCache;

/** JSON text to pass to the Go helper byte for byte (inside runGo's input). */
export function goRaw(text) {
  return { __goRaw: text };
}

function goInput(input) {
  const raws = [];
  const s = JSON.stringify(input, (k, v) => {
    if (v && typeof v === 'object' && typeof v.__goRaw === 'string') {
      raws.push(v.__goRaw);
      return `\u0000raw${raws.length - 1}\u0000`;
    }
    return v;
  });
  return s.replace(/"\\u0000raw(\d+)\\u0000"/g, (_, i) => raws[Number(i)]);
}

/** Runs the Go helper (test/gohelper) with one input document; returns its results. */
export function runGo(input) {
  if (!goHelper) {
    const dir = mkdtempSync(join(tmpdir(), 'mrtr-gohelper-'));
    goHelper = join(dir, 'gohelper');
    goCache = join(dir, 'wazero-cache');
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    execFileSync('go', ['build', '-o', goHelper, './sdk-js/test/gohelper'], { cwd: repoDir, stdio: ['ignore', 'inherit', 'inherit'] });
  }
  const r = spawnSync(goHelper, [], {
    input: goInput(input),
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    env: { ...process.env, MRTR_GOHELPER_CACHE: goCache },
  });
  if (r.status !== 0) throw new Error(`gohelper failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/**
 * Builds the policy bundle with the project's CLI, as
 * testdata/policy/cases.json says: `mrtr-wasm policy build policies -o FILE`.
 */
export function buildPolicyBundle(out) {
  const dir = mkdtempSync(join(tmpdir(), 'mrtr-cli-'));
  try {
    const cli = join(dir, 'mrtr-wasm');
    execFileSync('go', ['build', '-o', cli, './cmd/mrtr-wasm'], { cwd: repoDir, stdio: ['ignore', 'inherit', 'inherit'] });
    return execFileSync(cli, ['policy', 'build', 'policies', '-o', out], { cwd: repoDir, encoding: 'utf8' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The test Redis: MRTR_TEST_REDIS (as for the Go tests), or 127.0.0.1:6379. */
export const REDIS_URL = (process.env.MRTR_TEST_REDIS ?? 'redis://127.0.0.1:6379').replace(/\/0$/, '');

/** A node-redis client on the test Redis; fails fast (no endless reconnects) when it does not answer. */
export async function connectRedis() {
  const c = createClient({
    url: REDIS_URL,
    socket: {
      connectTimeout: 2000,
      reconnectStrategy: (retries) => (retries >= 3 ? new Error(`the tests need Redis at ${hostOf(REDIS_URL)}, and it does not answer`) : 200),
    },
  });
  c.on('error', () => {});
  await c.connect();
  return c;
}

/**
 * RFC 8785 canonical JSON of a JS value: an implementation independent of
 * the guard core's (members sorted by UTF-16 code units, which is what
 * Array.prototype.sort does; numbers and strings as ECMAScript writes
 * them, which is what RFC 8785 prescribes). Tests check the core's digest
 * and argument binding against it.
 */
export function canonicalJSON(v) {
  if (v === null || typeof v !== 'object') {
    const s = JSON.stringify(v);
    if (s === undefined) throw new TypeError('canonicalJSON: not a JSON value');
    return s;
  }
  if (Array.isArray(v)) return '[' + v.map(canonicalJSON).join(',') + ']';
  const keys = Object.keys(v).filter((k) => v[k] !== undefined).sort();
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJSON(v[k])).join(',') + '}';
}

function hostOf(u) {
  try {
    return new URL(u).host;
  } catch {
    return 'an unparsable MRTR_TEST_REDIS';
  }
}

/**
 * The test Redis, or null when it does not answer: then the tests that need
 * it skip, and one line says why (the Go tests' internal/testenv rule).
 * Under MRTR_REQUIRE_SERVICES=1 (.ci/run) a missing Redis is an error.
 * @returns {Promise<{redis: import('redis').RedisClientType | null, skip: string | false}>}
 */
export async function redisOrSkip() {
  try {
    return { redis: /** @type {any} */ (await connectRedis()), skip: false };
  } catch (e) {
    const why = `redis is missing (nothing answers at ${hostOf(REDIS_URL)}; set MRTR_TEST_REDIS or start redis-server)`;
    if (process.env.MRTR_REQUIRE_SERVICES === '1') throw new Error(`testenv: ${why}; MRTR_REQUIRE_SERVICES=1 makes this a failure`, { cause: e });
    console.log(`# testenv: skipped: ${why}`);
    return { redis: null, skip: `testenv: ${why}` };
  }
}

/** Polls l.get(op) until its state is want (a Redis TTL runs on the server's clock), failing after 10 s. */
export async function awaitState(l, op, want) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { state } = await l.get(op);
    if (state === want) return;
    if (Date.now() > deadline) throw new Error(`${op} is still ${state} after 10 s, want ${want}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
