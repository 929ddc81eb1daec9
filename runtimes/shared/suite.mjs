// The one test suite every runtime runs (Node, Deno, Bun, workerd,
// Chromium), against the installed mrtr-wasm package and the one
// guard.wasm. It uses only Web APIs; each runtime's harness supplies the
// inputs (bytes or a compiled module, vectors, the policy bundle) and
// registers the tests with its own runner.
//
//   suite(ctx) -> [{ name, fn }]
//   ctx: {
//     runtime:    'deno 2.9.6', …
//     wasm:       guard.wasm's bytes (Uint8Array)
//     module:     guard.wasm compiled (workerd: its module binding)
//     sha256:     the sha256 of ../wasm/guard.wasm, as run.sh computed it
//     vectors:    [{ name, file }] from testdata/vectors, sorted by name
//     exitModule: the tiny proc_exit module compiled (exitModuleBytes())
//     loaders:    [[label, () => source, expect?]] for createGuard({ module })
//     defaultModule: 'loads' | 'refused' (createGuard() without a module)
//     policy:     { bundle | parts: {wasm, data}, cases, dataFiles: {path: doc}, opa?,
//                   bundleRefused?: tar.gz bytes the runtime must refuse (workerd) }
//     log:        (line) => void
//     api:        the mrtr-wasm module namespace under test
//   }
//
// The package comes in as ctx.api, not as an import: each runtime loads it
// its own way (node_modules, an import map, workerd module names).

let api; // set by suite(ctx)

// --- assertions (no node:assert here: it is not everywhere) ---------------

class AssertionError extends Error {
  constructor(m) {
    super(m);
    this.name = 'AssertionError';
  }
}
const bigints = (k, x) => (typeof x === 'bigint' ? `${x}n` : x);
const show = (v) => {
  try {
    return JSON.stringify(v, bigints)?.slice(0, 300);
  } catch {
    return String(v);
  }
};
function ok(v, msg) {
  if (!v) throw new AssertionError(msg ?? 'expected a true value');
}
function eq(got, want, msg) {
  if (!Object.is(got, want)) throw new AssertionError(`${msg ?? 'not equal'}: got ${show(got)}, want ${show(want)}`);
}
// JSON equality with object keys in any order (arrays in order).
function sorted(v) {
  if (Array.isArray(v)) return v.map(sorted);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])]));
  return v;
}
function deq(got, want, msg) {
  const a = JSON.stringify(sorted(got), bigints);
  const b = JSON.stringify(sorted(want), bigints);
  if (a !== b) throw new AssertionError(`${msg ?? 'not deep-equal'}:\n got  ${a?.slice(0, 400)}\n want ${b?.slice(0, 400)}`);
}
async function rejects(p, code, msg) {
  let e;
  try {
    await p;
  } catch (x) {
    e = x;
  }
  ok(e !== undefined, `${msg ?? 'call'}: expected ${code}, it succeeded`);
  ok(e instanceof api.GuardError, `${msg ?? 'call'}: not a GuardError: ${e}`);
  eq(e.code, code, `${msg ?? 'call'}: code (${e.message})`);
  return e;
}

// --- helpers ----------------------------------------------------------------

const enc = new TextEncoder();
const dec = new TextDecoder();
export const hex = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, '0')).join('');
export async function sha256(bytes) {
  return hex(await crypto.subtle.digest('SHA-256', bytes));
}

/** The request bytes of a vector case (host/vectors_gen_test.go vecCase.bytes). */
export function caseBytes(c) {
  if (c.requestBase64) return Uint8Array.from(atob(c.requestBase64), (ch) => ch.charCodeAt(0));
  if (c.requestRepeat) {
    const r = c.requestRepeat;
    return enc.encode(r.prefix + r.fill.repeat(r.count) + r.suffix);
  }
  return enc.encode(c.request ?? '');
}

/**
 * A module that imports proc_exit and calls proc_exit(7) from its export
 * "run" (hand-assembled: type, import, function, export and code sections).
 */
export function exitModuleBytes() {
  const name = (s) => [s.length, ...enc.encode(s)];
  const section = (id, body) => [id, body.length, ...body];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [0x02, 0x60, 0x01, 0x7f, 0x00, 0x60, 0x00, 0x00]), // (i32)->(), ()->()
    ...section(2, [0x01, ...name('wasi_snapshot_preview1'), ...name('proc_exit'), 0x00, 0x00]),
    ...section(3, [0x01, 0x01]),
    ...section(7, [0x01, ...name('run'), 0x00, 0x01]),
    ...section(10, [0x01, 0x06, 0x00, 0x41, 0x07, 0x10, 0x00, 0x0b]), // i32.const 7; call 0
  ]);
}

/** A raw instance speaking guest/ABI.md, with the shim and counted imports. */
async function rawInstance(module, counts, waits) {
  const layer = api.wasiShim();
  const w = layer.imports.wasi_snapshot_preview1;
  let memory = null;
  for (const [k, f] of Object.entries(w)) {
    w[k] = (...a) => {
      counts[k] = (counts[k] ?? 0) + 1;
      if (k === 'poll_oneoff') {
        // Record every clock subscription's timeout.
        const v = new DataView(memory.buffer);
        for (let i = 0; i < a[2]; i++) if (v.getUint8(a[0] + i * 48 + 8) === 0) waits.push(v.getBigUint64(a[0] + i * 48 + 24, true));
      }
      return f(...a);
    };
  }
  const inst = await WebAssembly.instantiate(module, { ...layer.imports, mrtr: { interrupted: () => 0 } });
  const x = inst.exports;
  memory = x.memory;
  layer.start(inst);
  eq(x.guard_abi_version(), 1, 'ABI version');
  return (bytes) => {
    const ptr = x.guard_alloc(bytes.length);
    new Uint8Array(x.memory.buffer).set(bytes, ptr);
    const r = x.guard_call(bytes.length);
    return dec.decode(new Uint8Array(x.memory.buffer, Number(r >> 32n), Number(r & 0xffffffffn)));
  };
}

const contactSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Your name', minLength: 1 },
    email: { type: 'string', title: 'Work email', format: 'email' },
  },
  required: ['name', 'email'],
};
const baseRequest = (over = {}) => ({
  principal: 'alice',
  method: 'tools/call',
  target: 'book_demo_call',
  arguments: { topic: 'pricing' },
  capabilities: { elicitation: { form: {}, url: {} } },
  ...over,
});
const ann = { contact: { action: 'accept', content: { name: 'Ann', email: 'ann@example.com' } } };

async function askResume(g) {
  const res = await g.ask(baseRequest(), [api.form('contact', 'Who should we book the demo for?', contactSchema)]);
  eq(res.resultType, 'input_required', 'ask');
  const out = await g.resume(baseRequest({ requestState: res.requestState, inputResponses: ann }));
  eq(out.status, 'complete', 'resume');
  deq(out.content('contact'), ann.contact.content, 'answers');
  return res;
}

// A fresh WASI layer bound to a bare memory, for the import-by-import tests.
function bareShim(pages = 2) {
  const memory = new WebAssembly.Memory({ initial: pages });
  const layer = api.wasiShim();
  layer.attach(memory);
  return { layer, w: layer.imports.wasi_snapshot_preview1, v: () => new DataView(memory.buffer), u8: () => new Uint8Array(memory.buffer), memory };
}
const E = { SUCCESS: 0, BADF: 8, FAULT: 21, INVAL: 28 };
const canBlock = (() => {
  try {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 0);
    return true;
  } catch {
    return false;
  }
})();

// --- the suite ----------------------------------------------------------------

export function suite(ctx) {
  api = ctx.api;
  const { createGuard, createGuardWith, platform, wasiShim, WASIExit, form, url, generateKey, codes, loadPolicy, ASK_ENTRYPOINT, RESUME_ENTRYPOINT } = api;
  const log = ctx.log ?? (() => {});
  const tests = [];
  const test = (name, fn) => tests.push({ name, fn });

  test('guard.wasm is the Go host module (sha256)', async () => {
    const h = await sha256(ctx.wasm);
    log(`guard.wasm sha256 ${h} in ${ctx.runtime} (${ctx.wasm.length} bytes); ../wasm/guard.wasm ${ctx.sha256}`);
    eq(h, ctx.sha256, 'sha256 of the module this runtime runs');
    ok(ctx.module instanceof WebAssembly.Module, 'a compiled module');
  });

  test('the WASI layer provides exactly the imports guard.wasm declares', () => {
    const wanted = new Set(WebAssembly.Module.imports(ctx.module).map((i) => `${i.module}.${i.name}`));
    const given = new Set(Object.keys(wasiShim().imports.wasi_snapshot_preview1).map((n) => `wasi_snapshot_preview1.${n}`));
    given.add('mrtr.interrupted'); // the engine's
    deq([...wanted].sort(), [...given].sort(), 'imports');
    log(`${wanted.size} imports: ${[...wanted].sort().join(', ')}`);
  });

  test('every shared vector gives the exact response bytes', async () => {
    let total = 0;
    const counts = {};
    const waits = [];
    ok(ctx.vectors.length >= 6, 'vector files missing');
    for (const { name, file } of ctx.vectors) {
      // One fresh instance per file, as host/vectors_test.go does.
      const call = await rawInstance(ctx.module, counts, waits);
      for (const c of file.cases) {
        const got = call(caseBytes(c));
        eq(got, c.response, `${name} / ${c.name}`);
        const r = JSON.parse(got);
        eq(r.ok ?? false, c.expect.ok ?? false, `${name} / ${c.name}: ok`);
        if (c.expect.code) eq(r.error.code, c.expect.code, `${name} / ${c.name}: code`);
        if (c.expect.reason) eq(r.error.reason, c.expect.reason, `${name} / ${c.name}: reason`);
        if (c.expect.status) eq(r.status, c.expect.status, `${name} / ${c.name}: status`);
        total++;
      }
    }
    ok(total >= 200, `only ${total} cases`);
    // The core never asks to sleep (a browser's main thread could not).
    ok(waits.every((t) => t === 0n), `the guest asked to wait: ${show(waits)}`);
    ok(counts.random_get >= ctx.vectors.length, 'the Go runtime seeded itself from random_get');
    log(`${total} vector cases in ${ctx.vectors.length} files: byte-identical in ${ctx.runtime}; imports called: ${show(counts)}`);
  });

  // --- the shim, import by import ---

  test('wasi: args and environ are empty', () => {
    const { w, v } = bareShim();
    v().setUint32(100, 99, true);
    v().setUint32(104, 99, true);
    eq(w.args_sizes_get(100, 104), E.SUCCESS);
    eq(v().getUint32(100, true), 0, 'argc');
    eq(v().getUint32(104, true), 0, 'argv buf size');
    eq(w.args_get(200, 300), E.SUCCESS);
    v().setUint32(100, 99, true);
    eq(w.environ_sizes_get(100, 104), E.SUCCESS);
    eq(v().getUint32(100, true), 0, 'environ count');
    eq(w.environ_get(200, 300), E.SUCCESS);
    eq(w.args_sizes_get(2 * 65536 - 2, 100), E.FAULT, 'out of memory');
    eq(w.environ_sizes_get(-4, 100), E.FAULT, 'negative pointer');
  });

  test('wasi: clock_time_get gives the real wall clock and a monotonic clock', () => {
    const { w, v } = bareShim();
    const before = BigInt(Date.now()) * 1_000_000n;
    eq(w.clock_time_get(0, 0n, 8), E.SUCCESS);
    const wall = v().getBigUint64(8, true);
    const after = BigInt(Date.now()) * 1_000_000n;
    ok(wall >= before && wall <= after, `realtime ${wall} outside [${before}, ${after}]`);
    let last = -1n;
    for (let i = 0; i < 1000; i++) {
      eq(w.clock_time_get(1, 1000n, 16), E.SUCCESS);
      const t = v().getBigUint64(16, true);
      ok(t >= last, 'monotonic never goes back');
      last = t;
    }
    const m = BigInt(Math.round(performance.now() * 1e6));
    ok(last <= m + 1_000_000n && m - last < 5_000_000_000n, `monotonic is performance.now(): ${last} vs ${m}`);
    eq(w.clock_time_get(2, 0n, 8), E.INVAL, 'process CPU clock');
    eq(w.clock_time_get(3, 0n, 8), E.INVAL, 'thread CPU clock');
    eq(w.clock_time_get(0, 0n, 2 * 65536 - 4), E.FAULT, 'out of memory');
  });

  test('wasi: random_get fills from crypto.getRandomValues, over its 64 KiB limit too', () => {
    const { w, u8 } = bareShim(4);
    const n = 100_000;
    eq(w.random_get(1000, n), E.SUCCESS);
    const a = u8().slice(1000, 1000 + n);
    eq(w.random_get(1000, n), E.SUCCESS);
    const b = u8().slice(1000, 1000 + n);
    const seen = new Set(a);
    ok(seen.size === 256, `all byte values appear in 100 kB (${seen.size})`);
    const tail = a.subarray(n - 4096);
    ok(tail.some((x) => x !== 0), 'bytes past 64 KiB are filled');
    let same = 0;
    for (let i = 0; i < n; i++) if (a[i] === b[i]) same++;
    ok(same < n / 100, `two draws differ (${same} equal bytes)`);
    eq(u8()[999], 0, 'nothing before the buffer');
    eq(u8()[1000 + n], 0, 'nothing after the buffer');
    eq(w.random_get(4 * 65536 - 10, 11), E.FAULT, 'out of memory');
    eq(w.random_get(0, 0), E.SUCCESS, 'zero bytes');
  });

  test('wasi: fd_write accepts stdout and stderr and discards them; other fds are EBADF', () => {
    const { w, v, u8 } = bareShim();
    u8().set(enc.encode('panic: secret request data'), 500);
    v().setUint32(100, 500, true); // iov 0: 5 bytes
    v().setUint32(104, 5, true);
    v().setUint32(108, 505, true); // iov 1: 21 bytes
    v().setUint32(112, 21, true);
    for (const fd of [1, 2]) {
      v().setUint32(200, 0, true);
      eq(w.fd_write(fd, 100, 2, 200), E.SUCCESS, `fd ${fd}`);
      eq(v().getUint32(200, true), 26, `fd ${fd}: nwritten`);
    }
    eq(w.fd_write(0, 100, 2, 200), E.BADF, 'stdin');
    eq(w.fd_write(3, 100, 2, 200), E.BADF, 'fd 3');
    v().setUint32(112, 1 << 30, true);
    eq(w.fd_write(1, 100, 2, 200), E.FAULT, 'an iovec outside memory');
    eq(w.fd_write(1, 2 * 65536 - 4, 2, 200), E.FAULT, 'the iovec list outside memory');
  });

  test('wasi: fd_read gives end of file on stdin; other fds are EBADF', () => {
    const { w, v } = bareShim();
    v().setUint32(100, 500, true);
    v().setUint32(104, 64, true);
    v().setUint32(200, 77, true);
    eq(w.fd_read(0, 100, 1, 200), E.SUCCESS);
    eq(v().getUint32(200, true), 0, 'nread');
    eq(w.fd_read(1, 100, 1, 200), E.BADF, 'stdout');
    eq(w.fd_read(5, 100, 1, 200), E.BADF, 'fd 5');
    eq(w.fd_read(0, 100, 1, 2 * 65536), E.FAULT, 'nread outside memory');
  });

  test('wasi: stdio are character devices with their rights and flags; other fds are EBADF', () => {
    const { w, v } = bareShim();
    for (const fd of [0, 1, 2]) {
      eq(w.fd_fdstat_get(fd, 64), E.SUCCESS, `fd ${fd}`);
      eq(v().getUint8(64), 2, 'character device');
      eq(v().getUint16(66, true), 0, 'no flags yet');
      const rights = v().getBigUint64(72, true);
      eq((rights >> 1n) & 1n, fd === 0 ? 1n : 0n, `fd ${fd}: fd_read right`);
      eq((rights >> 6n) & 1n, fd === 0 ? 0n : 1n, `fd ${fd}: fd_write right`);
      eq(v().getBigUint64(80, true), 0n, 'inheriting rights');
      eq(w.fd_fdstat_set_flags(fd, 0x8005), E.SUCCESS);
      eq(w.fd_fdstat_get(fd, 64), E.SUCCESS);
      eq(v().getUint16(66, true), 0x5, 'append|nonblock kept, unknown bits dropped');
      eq(w.fd_close(fd), E.SUCCESS, 'closing stdio is a no-op');
    }
    for (const fd of [3, 4, 100]) {
      eq(w.fd_fdstat_get(fd, 64), E.BADF, `fd ${fd}`);
      eq(w.fd_fdstat_set_flags(fd, 4), E.BADF, `fd ${fd}`);
      eq(w.fd_close(fd), E.BADF, `fd ${fd}`);
    }
    eq(w.fd_fdstat_get(1, 2 * 65536 - 8), E.FAULT, 'out of memory');
  });

  test('wasi: no preopened directory and no file system (EBADF)', () => {
    const { w } = bareShim();
    for (const fd of [0, 3, 4]) {
      eq(w.fd_prestat_get(fd, 64), E.BADF, `fd_prestat_get ${fd}`);
      eq(w.fd_prestat_dir_name(fd, 64, 16), E.BADF, `fd_prestat_dir_name ${fd}`);
    }
    eq(w.path_open(3, 0, 100, 4, 0, 0n, 0n, 0, 200), E.BADF, 'path_open');
    eq(w.path_filestat_get(3, 0, 100, 4, 200), E.BADF, 'path_filestat_get');
  });

  test('wasi: poll_oneoff waits on clocks and finds stdio ready', () => {
    const { w, v } = bareShim();
    const sub = (i, userdata, tag, a, timeout = 0n, flags = 0) => {
      const at = 1024 + i * 48;
      v().setBigUint64(at, userdata, true);
      v().setUint8(at + 8, tag);
      v().setUint32(at + 16, a, true);
      v().setBigUint64(at + 24, timeout, true);
      v().setUint16(at + 40, flags, true);
    };
    const event = (i) => {
      const at = 4096 + i * 32;
      return { userdata: v().getBigUint64(at, true), error: v().getUint16(at + 8, true), type: v().getUint8(at + 10), flags: v().getUint16(at + 24, true) };
    };
    eq(w.poll_oneoff(1024, 4096, 0, 8), E.INVAL, 'no subscriptions');
    // One relative clock wait of 30 ms.
    sub(0, 41n, 0, 1, 30_000_000n);
    let t = performance.now();
    eq(w.poll_oneoff(1024, 4096, 1, 8), E.SUCCESS);
    const waited = performance.now() - t;
    eq(v().getUint32(8, true), 1, 'one event');
    deq(event(0), { userdata: 41n, error: 0, type: 0, flags: 0 }, 'clock event');
    if (canBlock) ok(waited >= 25, `a 30 ms wait took ${waited} ms`);
    log(`poll_oneoff 30 ms clock wait: ${waited.toFixed(1)} ms (${canBlock ? 'Atomics.wait blocks here' : 'this thread may not block: the wait ends at once'})`);
    // An absolute deadline in the past is ready at once.
    sub(0, 42n, 0, 0, 1n, 1);
    t = performance.now();
    eq(w.poll_oneoff(1024, 4096, 1, 8), E.SUCCESS);
    ok(performance.now() - t < 20, 'a past deadline does not wait');
    eq(event(0).userdata, 42n);
    // stdio and clocks together: the fds are ready, the clock not waited for.
    sub(0, 1n, 1, 0); // fd_read stdin: ready, hung up (end of file)
    sub(1, 2n, 2, 1); // fd_write stdout: ready
    sub(2, 3n, 2, 9); // fd_write fd 9: EBADF
    sub(3, 4n, 0, 1, 10_000_000_000n); // 10 s: not waited for
    sub(4, 5n, 0, 7, 1n); // unknown clock: EINVAL
    sub(5, 6n, 9, 0); // unknown event type: EINVAL
    t = performance.now();
    eq(w.poll_oneoff(1024, 4096, 6, 8), E.SUCCESS);
    ok(performance.now() - t < 1000, 'ready fds end the wait');
    eq(v().getUint32(8, true), 5, 'five events');
    deq([0, 1, 2, 3, 4].map(event), [
      { userdata: 1n, error: 0, type: 1, flags: 1 },
      { userdata: 2n, error: 0, type: 2, flags: 0 },
      { userdata: 3n, error: E.BADF, type: 2, flags: 0 },
      { userdata: 5n, error: E.INVAL, type: 0, flags: 0 },
      { userdata: 6n, error: E.INVAL, type: 9, flags: 0 },
    ]);
    eq(w.poll_oneoff(2 * 65536 - 40, 4096, 1, 8), E.FAULT, 'subscriptions outside memory');
  });

  test('wasi: sched_yield returns; proc_exit throws WASIExit', () => {
    const { w, layer } = bareShim();
    eq(w.sched_yield(), E.SUCCESS);
    let e;
    try {
      w.proc_exit(3);
    } catch (x) {
      e = x;
    }
    ok(e instanceof WASIExit, `proc_exit threw ${e}`);
    eq(e.code, 3);
    eq(layer.exitCode, 3);
  });

  test('wasi: proc_exit from inside a module unwinds it with its exit code', async () => {
    const layer = wasiShim();
    const inst = await WebAssembly.instantiate(ctx.exitModule, layer.imports);
    let e;
    try {
      inst.exports.run();
    } catch (x) {
      e = x;
    }
    ok(e instanceof WASIExit, `run threw ${e}`);
    eq(e.code, 7);
    eq(layer.exitCode, 7);
  });

  test('wasi: start refuses a module that is not a reactor', async () => {
    const inst = await WebAssembly.instantiate(ctx.exitModule, wasiShim().imports);
    let e;
    try {
      wasiShim().start(inst);
    } catch (x) {
      e = x;
    }
    ok(e && /memory|reactor/.test(e.message), `start: ${e}`);
  });

  // --- the guard ---

  test('guard: ask, resume, decline, re-ask, tamper, wrong principal', async () => {
    const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com', module: ctx.module });
    const res = await askResume(g);
    const d = await g.resume(baseRequest({ requestState: res.requestState, inputResponses: { contact: { action: 'decline' } } }));
    eq(d.status, 'declined');
    const r = await g.resume(baseRequest({ requestState: res.requestState, inputResponses: { contact: { action: 'accept', content: { name: 'Ann', email: 'nope' } } } }));
    eq(r.status, 'input_required');
    eq(r.round, 2);
    eq(r.inputRequired.inputRequests.contact.params.requestedSchema.properties.name.default, 'Ann', 'the right field kept');
    const s = res.requestState;
    const tampered = s.slice(0, 40) + (s[40] === 'A' ? 'B' : 'A') + s.slice(41);
    const e = await rejects(g.resume(baseRequest({ requestState: tampered, inputResponses: ann })), codes.STATE_INVALID, 'tampered');
    eq(e.jsonRpcCode, -32602);
    eq(e.reason, 'tampered');
    eq((await rejects(g.open(baseRequest({ principal: 'bob', requestState: s })), codes.STATE_INVALID)).reason, 'principal');
    await rejects(g.ask(baseRequest(), [form('k', 'Your password?', { type: 'object', properties: { password: { type: 'string' } } })]), codes.FORM_SECRET_FIELD, 'a secret field');
    await rejects(g.ask(baseRequest({ capabilities: { elicitation: { form: {} } } }), [url('u', 'Connect', 'https://crm.example.com/c')]), codes.CAPABILITY_MISSING, 'url mode not declared');
    const ran = [];
    const once1 = await g.once(await g.resume(baseRequest({ requestState: s, inputResponses: ann })), () => ran.push(1) && { id: 'b-1' });
    const once2 = await g.once(await g.resume(baseRequest({ requestState: s, inputResponses: ann })), () => ran.push(2) && { id: 'b-2' });
    eq(ran.length, 1, 'the effect ran once');
    eq(once2.replay, true);
    deq(once2.result, once1.result);
    await g.close();
  });

  test('guard: the module gets real entropy and a real clock', async () => {
    const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com', module: ctx.module });
    const a = await g.stats();
    const b = await g.stats();
    ok(/^[0-9a-f]{32}$/.test(a.random) && a.random !== b.random, 'fresh random bytes');
    ok(Math.abs(a.nowMs - Date.now()) < 5000, `wall clock ${a.nowMs} vs ${Date.now()}`);
    const [x, y] = [await g.ask(baseRequest(), []), await g.ask(baseRequest(), [])];
    ok(x.requestState !== y.requestState, '48 fresh bytes per call');
    await g.close();
  });

  test('guard: proc_exit during a call replaces the instance', async () => {
    // The real guest, asked to exit from inside a call: a small heap limit
    // makes the Go runtime read its clock while it works, and the armed
    // clock calls the shim's own proc_exit there.
    let armed = false;
    const layers = [];
    const exiting = {
      ...platform,
      createWasi() {
        const layer = wasiShim();
        const w = layer.imports.wasi_snapshot_preview1;
        const clock = w.clock_time_get;
        w.clock_time_get = (...a) => {
          if (armed) {
            armed = false;
            w.proc_exit(3);
          }
          return clock(...a);
        };
        layers.push(layer);
        return layer;
      },
    };
    const g = await createGuardWith(exiting, ctx.module, { keys: generateKey(), audience: 'crm.example.com', memoryLimitMiB: 4 });
    const { requestState } = await g.ask(baseRequest(), [form('contact', 'Who?', contactSchema)]);
    const big = baseRequest({ arguments: { a: Array.from({ length: 30000 }, (_, i) => ({ i })) } });
    armed = true;
    const e = await rejects(g.ask(big, []), codes.INTERNAL, 'the exiting call');
    ok(/replaced/.test(e.message), e.message);
    eq(armed, false, 'the guest read its clock during the call');
    eq(layers.filter((l) => l.exitCode === 3).length, 1, 'one instance exited');
    const out = await g.resume(baseRequest({ requestState, inputResponses: ann }));
    eq(out.status, 'complete', 'a new instance, configured with the same keys');
    ok(layers.length >= 2, 'a new instance was started');
    await g.close();
  });

  test('guard: guard.wasm loads from every source this runtime has', async () => {
    for (const [label, source, expect] of ctx.loaders) {
      const p = createGuard({ keys: generateKey(), audience: 'load.example', module: await source() });
      if (expect) {
        const e = await rejects(p, expect.code, label);
        ok(expect.message.test(e.message), `${label}: ${e.message}`);
        log(`load from ${label}: refused as expected (${e.message})`);
        continue;
      }
      const g = await p;
      await askResume(g);
      await g.close();
      log(`load from ${label}: ok`);
    }
    const d = createGuard({ keys: generateKey(), audience: 'load.example' });
    if (ctx.defaultModule === 'loads') {
      await askResume(await d);
      log('createGuard() without a module: the bundled guard.wasm loads');
    } else {
      const e = await rejects(d, codes.CONFIG_INVALID, 'no module given');
      log(`createGuard() without a module: refused (${e.message})`);
    }
  });

  if (ctx.policy) {
    const P = ctx.policy;
    const loadIt = (opts = {}) => (P.bundle ? loadPolicy(P.bundle, { ...opts, opa: P.opa }) : loadPolicy(P.parts, { ...opts, opa: P.opa }));

    test('policy: every shared case gives the expected decision (opa-wasm)', async () => {
      const policy = await loadIt();
      const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com', module: ctx.module });
      deq(policy.entrypoints.sort(), [ASK_ENTRYPOINT, RESUME_ENTRYPOINT].sort(), 'entrypoints');
      ok(P.cases.cases.length >= 20, 'cases missing');
      for (const c of P.cases.cases) {
        ok(c.data in P.dataFiles, `data file ${c.data}`);
        policy.setData(P.dataFiles[c.data]);
        const got = policy.raw(c.entrypoint === 'ask' ? ASK_ENTRYPOINT : RESUME_ENTRYPOINT, c.input);
        deq(got, c.expect, `${c.name} (${c.data})`);
        // Read by the core, as every host reads it.
        eq((await g.policyDecision(got)).allow, c.expect.allow === true && (c.expect.deny ?? []).length === 0 && c.expect.max_rounds > 0 && c.expect.ttl_seconds > 0, `${c.name}: allow`);
      }
      await g.close();
      log(`${P.cases.cases.length} shared policy cases: the same decisions in ${ctx.runtime} as in Go`);
    });

    if (P.bundleRefused) {
      test('policy: the tar.gz bundle is refused clearly where nothing compiles at run time', async () => {
        const e = await rejects(loadPolicy(P.bundleRefused, { opa: P.opa }), codes.CONFIG_INVALID, 'the bundle bytes');
        ok(/compiles no WebAssembly at run time/.test(e.message), e.message);
        log(`policy bundle bytes: refused as expected (${e.message})`);
      });
    }

    test('policy: a guard with the demo policy refuses and narrows', async () => {
      const policy = await loadIt({ data: P.dataFiles['policies/data/demo.json'] });
      const g = await createGuard({ keys: generateKey(), audience: 'crm.example.com', module: ctx.module, policy });
      const res = await g.ask(baseRequest(), [form('contact', 'Who?', contactSchema)]);
      const o = await g.open(baseRequest({ requestState: res.requestState }));
      const ttl = P.dataFiles['policies/data/demo.json'].tools[baseRequest().target].ttl_seconds;
      eq((Date.parse(o.expiresAt) - Date.parse(o.issuedAt)) / 1000, ttl, 'the policy TTL is sealed');
      const elsewhere = url('calendar', 'Connect your calendar', 'https://evil.example.net/connect');
      const e = await rejects(g.ask(baseRequest({ target: 'connect_calendar' }), [elsewhere]), codes.POLICY_DENIED, 'a URL on another host');
      eq(e.data?.policy?.code, 'policy.url_host_not_allowed', 'the denial names its code');
      const ok2 = await g.ask(baseRequest({ target: 'connect_calendar' }), [url('calendar', 'Connect your calendar', 'https://localhost/connect/7f3a')]);
      eq(ok2.resultType, 'input_required', 'its own page is allowed');
      await g.close();
    });
  }

  return tests;
}

/** Runs the tests one by one; returns [{ name, ok, ms, error? }]. */
export async function runAll(tests, log = () => {}) {
  const out = [];
  for (const t of tests) {
    const t0 = performance.now();
    try {
      await t.fn();
      out.push({ name: t.name, ok: true, ms: performance.now() - t0 });
      log(`ok   ${t.name}`);
    } catch (e) {
      out.push({ name: t.name, ok: false, ms: performance.now() - t0, error: `${e?.name}: ${e?.message}\n${e?.stack ?? ''}` });
      log(`FAIL ${t.name}: ${e?.message}`);
    }
  }
  return out;
}
