// WASI preview1 for guard.wasm in any JavaScript runtime (Node, Deno, Bun,
// workerd, browsers): exactly the imports the module declares, over
// crypto.getRandomValues, Date.now and performance.now. The guest is a Go
// reactor that never opens a file: it reads its clocks and random bytes,
// looks at stdio once at start-up, and may print a panic to stderr (which
// may hold request data, so it is discarded, as the Go host does).
//
//   import              what it does here
//   random_get          crypto.getRandomValues (64 KiB per call, its limit)
//   clock_time_get      realtime: Date.now(); monotonic: performance.now()
//   fd_write            fds 1, 2: accepted and discarded; others EBADF
//   fd_read             fd 0: end of file; others EBADF
//   fd_fdstat_get, fd_fdstat_set_flags, fd_close
//                       fds 0..2 are character devices; others EBADF
//   fd_prestat_get, fd_prestat_dir_name, path_open, path_filestat_get
//                       EBADF: no preopened directory, no file system
//   args_*, environ_*   empty
//   poll_oneoff         clock waits block (Atomics.wait where the runtime
//                       allows it, else they end at once); stdio is ready
//   sched_yield         nothing to yield to
//   proc_exit           throws WASIExit: the instance is finished

export const WASI_MODULE = 'wasi_snapshot_preview1';

/** The preview1 errno values this layer returns. */
export const errno = Object.freeze({ SUCCESS: 0, BADF: 8, FAULT: 21, INVAL: 28 });

/** Thrown by proc_exit: the guest ended itself, and its instance may not be used again. */
export class WASIExit extends Error {
  constructor(code) {
    super(`mrtr: guard.wasm called proc_exit(${code})`);
    this.name = 'WASIExit';
    this.code = code;
  }
}

const CLOCK_REALTIME = 0;
const CLOCK_MONOTONIC = 1;
const FILETYPE_CHARACTER_DEVICE = 2;
const EVENT_CLOCK = 0;
const EVENT_FD_READ = 1;
const EVENT_FD_WRITE = 2;
const SUBCLOCK_ABSTIME = 1;
const EVENT_FD_HANGUP = 1;
const FDFLAGS_MASK = 0x1f; // append, dsync, nonblock, rsync, sync
// fd_read, fd_fdstat_set_flags, poll_fd_readwrite; fd_write for 1 and 2.
const RIGHTS_STDIN = (1n << 1n) | (1n << 3n) | (1n << 27n);
const RIGHTS_STDOUT = (1n << 6n) | (1n << 3n) | (1n << 27n);
const RANDOM_CHUNK = 65536;
const SUB_SIZE = 48;
const EVENT_SIZE = 32;

const realtimeNs = () => BigInt(Date.now()) * 1_000_000n;
const monotonicNs = () => BigInt(Math.round(performance.now() * 1e6));

// sleepMs blocks the thread where the runtime allows it (Node, Deno, Bun,
// workers). A browser's main thread and workerd refuse, and their clocks
// may not advance during a call: the wait then ends at once and the guest
// sees an early wake-up, which the Go scheduler handles (it re-checks its
// timers). The guard core never sleeps (a test counts the imports a full
// vector run makes), so this only matters for a misbehaving module.
let sleepCell;
let cannotBlock = false;
function sleepMs(ms) {
  if (!(ms > 0) || cannotBlock) return;
  try {
    sleepCell ??= new Int32Array(new SharedArrayBuffer(4));
    Atomics.wait(sleepCell, 0, 0, Math.min(ms, 2 ** 31 - 1));
  } catch {
    cannotBlock = true;
  }
}

/**
 * A fresh WASI preview1 layer for one instance.
 * @returns {{imports: any, start(instance: WebAssembly.Instance): void, attach(memory: WebAssembly.Memory): void, exitCode: number | undefined}}
 */
export function wasiShim() {
  const fill = (b) => globalThis.crypto.getRandomValues(b);
  let memory = null;
  let buffer = null;
  let view = null;
  let bytes = null;
  const fdflags = [0, 0, 0];
  const layer = /** @type {any} */ ({ exitCode: undefined });

  // Views of linear memory, re-made when memory grew (the old buffer is
  // detached then).
  function mem() {
    const b = memory.buffer;
    if (b !== buffer) {
      buffer = b;
      view = new DataView(b);
      bytes = new Uint8Array(b);
    }
    return view;
  }
  const inside = (ptr, n) => ptr + n <= mem().byteLength;
  const isStdio = (fd) => fd === 0 || fd === 1 || fd === 2;

  // The iovec list's total length (for fd_write), or -1 if it is outside memory.
  function iovTotal(iovs, n) {
    if (!inside(iovs, n * 8)) return -1;
    let total = 0;
    for (let i = 0; i < n; i++) {
      const ptr = view.getUint32(iovs + i * 8, true);
      const len = view.getUint32(iovs + i * 8 + 4, true);
      if (!inside(ptr, len)) return -1;
      total += len;
    }
    return total;
  }

  function writeEvent(at, userdata, error, type, hangup) {
    view.setBigUint64(at, userdata, true);
    view.setUint16(at + 8, error, true);
    view.setUint8(at + 10, type);
    for (let i = 11; i < EVENT_SIZE; i++) view.setUint8(at + i, 0);
    if (hangup) view.setUint16(at + 24, EVENT_FD_HANGUP, true);
  }

  const wasi = {
    args_sizes_get(argc, size) {
      if (!inside(argc, 4) || !inside(size, 4)) return errno.FAULT;
      view.setUint32(argc, 0, true);
      view.setUint32(size, 0, true);
      return errno.SUCCESS;
    },
    args_get() {
      return errno.SUCCESS;
    },
    environ_sizes_get(count, size) {
      if (!inside(count, 4) || !inside(size, 4)) return errno.FAULT;
      view.setUint32(count, 0, true);
      view.setUint32(size, 0, true);
      return errno.SUCCESS;
    },
    environ_get() {
      return errno.SUCCESS;
    },

    clock_time_get(id, _precision, out) {
      let t;
      if (id === CLOCK_REALTIME) t = realtimeNs();
      else if (id === CLOCK_MONOTONIC) t = monotonicNs();
      else return errno.INVAL;
      if (!inside(out, 8)) return errno.FAULT;
      view.setBigUint64(out, t, true);
      return errno.SUCCESS;
    },

    random_get(ptr, len) {
      if (!inside(ptr, len)) return errno.FAULT;
      for (let i = 0; i < len; i += RANDOM_CHUNK) fill(bytes.subarray(ptr + i, ptr + Math.min(len, i + RANDOM_CHUNK)));
      return errno.SUCCESS;
    },

    fd_write(fd, iovs, n, nwritten) {
      if (fd !== 1 && fd !== 2) return errno.BADF;
      const total = iovTotal(iovs, n);
      if (total < 0 || !inside(nwritten, 4)) return errno.FAULT;
      view.setUint32(nwritten, total, true);
      return errno.SUCCESS;
    },
    fd_read(fd, iovs, n, nread) {
      if (fd !== 0) return errno.BADF;
      if (iovTotal(iovs, n) < 0 || !inside(nread, 4)) return errno.FAULT;
      view.setUint32(nread, 0, true);
      return errno.SUCCESS;
    },
    fd_close(fd) {
      return isStdio(fd) ? errno.SUCCESS : errno.BADF;
    },
    fd_fdstat_get(fd, out) {
      if (!isStdio(fd)) return errno.BADF;
      if (!inside(out, 24)) return errno.FAULT;
      view.setUint8(out, FILETYPE_CHARACTER_DEVICE);
      view.setUint8(out + 1, 0);
      view.setUint16(out + 2, fdflags[fd], true);
      view.setUint32(out + 4, 0, true);
      view.setBigUint64(out + 8, fd === 0 ? RIGHTS_STDIN : RIGHTS_STDOUT, true);
      view.setBigUint64(out + 16, 0n, true);
      return errno.SUCCESS;
    },
    fd_fdstat_set_flags(fd, flags) {
      if (!isStdio(fd)) return errno.BADF;
      fdflags[fd] = flags & FDFLAGS_MASK;
      return errno.SUCCESS;
    },
    fd_prestat_get() {
      return errno.BADF;
    },
    fd_prestat_dir_name() {
      return errno.BADF;
    },
    path_open() {
      return errno.BADF;
    },
    path_filestat_get() {
      return errno.BADF;
    },

    poll_oneoff(subs, events, n, nevents) {
      if (n === 0) return errno.INVAL;
      if (!inside(subs, n * SUB_SIZE) || !inside(events, n * EVENT_SIZE) || !inside(nevents, 4)) return errno.FAULT;
      const ready = [];
      let wake = null; // the earliest clock subscription: [deadline ns, its clock, userdata]
      for (let i = 0; i < n; i++) {
        const at = subs + i * SUB_SIZE;
        const userdata = view.getBigUint64(at, true);
        const type = view.getUint8(at + 8);
        if (type === EVENT_CLOCK) {
          const id = view.getUint32(at + 16, true);
          if (id !== CLOCK_REALTIME && id !== CLOCK_MONOTONIC) {
            ready.push([userdata, errno.INVAL, type, false]);
            continue;
          }
          const now = id === CLOCK_REALTIME ? realtimeNs() : monotonicNs();
          const timeout = view.getBigUint64(at + 24, true);
          const deadline = view.getUint16(at + 40, true) & SUBCLOCK_ABSTIME ? timeout : now + timeout;
          if (deadline <= now) ready.push([userdata, errno.SUCCESS, type, false]);
          else if (wake === null || deadline - now < wake[0]) wake = [deadline - now, userdata];
        } else if (type === EVENT_FD_READ || type === EVENT_FD_WRITE) {
          const fd = view.getUint32(at + 16, true);
          const ok = type === EVENT_FD_READ ? fd === 0 : fd === 1 || fd === 2;
          ready.push([userdata, ok ? errno.SUCCESS : errno.BADF, type, ok && type === EVENT_FD_READ]);
        } else {
          ready.push([userdata, errno.INVAL, type, false]);
        }
      }
      if (ready.length === 0 && wake !== null) {
        sleepMs(Number(wake[0]) / 1e6);
        ready.push([wake[1], errno.SUCCESS, EVENT_CLOCK, false]);
      }
      mem(); // a wait does not grow memory, but keep the views honest
      ready.forEach(([userdata, err, type, hangup], i) => writeEvent(events + i * EVENT_SIZE, userdata, err, type, hangup));
      view.setUint32(nevents, ready.length, true);
      return errno.SUCCESS;
    },

    sched_yield() {
      return errno.SUCCESS;
    },

    proc_exit(code) {
      layer.exitCode = code;
      throw new WASIExit(code);
    },
  };

  // Pointers, lengths and fds arrive as signed i32: each import sees them
  // unsigned, as WASI defines them (i64 arguments arrive as BigInt).
  const u32 = (x) => (typeof x === 'number' ? x >>> 0 : x);
  for (const [name, f] of Object.entries(wasi)) wasi[name] = (...a) => f(...a.map(u32));
  layer.imports = { [WASI_MODULE]: wasi };
  /** Binds the layer to a memory (start does this; tests call it directly). */
  layer.attach = (m) => {
    memory = m;
    buffer = null;
  };
  /**
   * Starts a reactor: binds its memory and runs _initialize once.
   * @param {WebAssembly.Instance} instance
   */
  layer.start = (instance) => {
    const x = instance.exports;
    if (!(x.memory instanceof WebAssembly.Memory)) throw new Error('mrtr: the module exports no memory');
    if (typeof x._initialize !== 'function') throw new Error('mrtr: the module is not a WASI reactor (no _initialize)');
    layer.attach(x.memory);
    x._initialize();
  };
  return layer;
}
