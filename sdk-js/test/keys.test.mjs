// Keys in the MRTR_KEYS format, as host/keys.go reads them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import util from 'node:util';
import { parseKeys, generateKey, keysFromEnv, loadKeyFile, Keyring, GuardError, codes } from '../index.js';

const a = generateKey();
const b = generateKey();
const c = generateKey();

test('commas, spaces, tabs and new lines separate keys; # lines are comments', () => {
  for (const text of [`${a},${b},${c}`, `${a} ${b}\t${c}`, `# primary\n${a}\n\n  # old\n${b}, ${c}\r\n`]) {
    const k = parseKeys(text);
    assert.ok(k instanceof Keyring);
    assert.equal(k.size, 3, text);
  }
});

test('bad keys are named by position, never by value', () => {
  const cases = [
    ['', 'mrtr: no keys (want k4.local.… keys; `mrtr-wasm keygen` makes one)'],
    ['# only a comment', 'mrtr: no keys (want k4.local.… keys; `mrtr-wasm keygen` makes one)'],
    [`${a},k3.local.AAAA`, 'mrtr: key 2: not a PASERK k4.local key'],
    [`${a},${a.slice(0, -2)}`, 'mrtr: key 2: a k4.local key holds 32 bytes in base64url without padding'],
    [`${a}=`, 'mrtr: key 1: a k4.local key holds 32 bytes in base64url without padding'],
    [`${a},${b},${a}`, 'mrtr: key 3 is listed twice'],
  ];
  for (const [text, msg] of cases) {
    assert.throws(() => parseKeys(text), (e) => {
      assert.ok(e instanceof GuardError);
      assert.equal(e.code, codes.CONFIG_INVALID);
      assert.equal(e.message, msg);
      assert.ok(!e.stack.includes(a.slice(9)), 'the key is not in the error');
      return true;
    });
  }
  // Non-canonical base64url (unused bits set) is refused, as Go's Strict() does.
  const last = a.at(-1);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const bumped = a.slice(0, -1) + alphabet[(alphabet.indexOf(last) & ~3) + 1];
  assert.throws(() => parseKeys(bumped), /32 bytes/);
});

test('a keyring never shows its keys', () => {
  const k = parseKeys(`${a}\n${b}`);
  for (const s of [String(k), JSON.stringify({ k }), util.inspect(k, { showHidden: true }), util.format('%o', k)]) {
    assert.ok(!s.includes(a.slice(9)) && !s.includes(b.slice(9)), s);
  }
  assert.equal(String(k), 'Keyring(2 keys, redacted)');
  assert.equal(JSON.stringify({ k }), '{"k":"Keyring(2 keys, redacted)"}');
});

test('MRTR_KEYS and key files', async () => {
  assert.equal(keysFromEnv({}), undefined);
  assert.equal(keysFromEnv({ MRTR_KEYS: '  ' }), undefined);
  assert.equal(keysFromEnv({ MRTR_KEYS: `${a},${b}` }).size, 2);
  assert.throws(() => keysFromEnv({ MRTR_KEYS: 'nope' }), /^GuardError: MRTR_KEYS: mrtr: key 1: not a PASERK k4.local key/);
  const dir = mkdtempSync(join(tmpdir(), 'mrtr-keys-'));
  try {
    writeFileSync(join(dir, 'keys'), `# rotated 2026-11-01\n${a}\n${b}\n`);
    assert.equal((await loadKeyFile(join(dir, 'keys'))).size, 2);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
