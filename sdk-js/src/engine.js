// One instance of guard.wasm: the ABI of guest/ABI.md. Portable: it uses
// only WebAssembly, TextEncoder/TextDecoder and performance.now; the WASI
// imports come from the platform layer.

const ABI_VERSION = 1;
const EXPORTS = ['guard_abi_version', 'guard_alloc', 'guard_call', 'guard_stats', 'guard_set_memory_limit', 'memory'];
const encoder = new TextEncoder();
const MASK32 = 0xffffffffn;

export class WasmInstance {
  /**
   * Instantiates and starts one instance (a reactor: the platform's WASI
   * layer runs _initialize).
   * @param {WebAssembly.Module} module
   * @param {{createWasi(): {imports: object, start(i: WebAssembly.Instance): void}}} platform
   * @param {{memoryLimitMiB?: number}} [opts]
   */
  static async create(module, platform, opts = {}) {
    const self = new WasmInstance();
    const wasi = platform.createWasi();
    const imports = { ...wasi.imports, mrtr: { interrupted: () => self.#interrupted() } };
    const instance = await WebAssembly.instantiate(module, imports);
    for (const name of EXPORTS) {
      if (!(name in instance.exports)) throw new Error(`mrtr: guard.wasm does not export ${name}`);
    }
    wasi.start(instance);
    self.#x = instance.exports;
    const v = self.#x.guard_abi_version();
    if (v !== ABI_VERSION) throw new Error(`mrtr: guard.wasm speaks ABI ${v}, this host ${ABI_VERSION}`);
    if (opts.memoryLimitMiB > 0) self.#x.guard_set_memory_limit(opts.memoryLimitMiB);
    return self;
  }

  #x;
  #buf = null;
  #u8 = null;
  #deadline = 0;
  #signal = undefined;
  /** Configuration generation this instance was configured with. */
  gen = 0;

  // The guest asks at checkpoints whether to stop: its deadline passed or
  // its caller went away.
  #interrupted() {
    if (this.#signal?.aborted) return 1;
    return this.#deadline !== 0 && performance.now() > this.#deadline ? 1 : 0;
  }

  // Memory growth replaces the ArrayBuffer behind memory.buffer and
  // detaches old views: the view is re-created whenever the buffer changed,
  // which is checked after every call into the module.
  #bytes() {
    const b = this.#x.memory.buffer;
    if (b !== this.#buf) {
      this.#buf = b;
      this.#u8 = new Uint8Array(b);
    }
    return this.#u8;
  }

  /**
   * Runs one request envelope. Returns a view of the response in the
   * instance's memory, valid until the next call. Throws whatever the
   * module throws (a trap, a WASI exit): the instance is then unusable.
   * @param {string | Uint8Array} input
   * @param {number} [timeoutMs] 0 = none
   * @param {AbortSignal} [signal]
   */
  call(input, timeoutMs = 0, signal = undefined) {
    const x = this.#x;
    let n;
    if (typeof input === 'string') {
      if (input.length <= 65536) {
        // Encode straight into the guest's buffer: at most 3 bytes per
        // UTF-16 unit; the call is told the exact size written.
        const cap = input.length * 3;
        const ptr = x.guard_alloc(cap) >>> 0;
        const mem = this.#bytes();
        // subarray would quietly shorten a range past the end: refuse it.
        if (ptr + cap > mem.length) throw new Error('guest buffer out of range');
        n = encoder.encodeInto(input, mem.subarray(ptr, ptr + cap)).written;
      } else {
        const b = encoder.encode(input);
        const ptr = x.guard_alloc(b.length);
        this.#bytes().set(b, ptr);
        n = b.length;
      }
    } else {
      const ptr = x.guard_alloc(input.length);
      this.#bytes().set(input, ptr);
      n = input.length;
    }
    this.#deadline = timeoutMs > 0 ? performance.now() + timeoutMs : 0;
    this.#signal = signal;
    let r;
    try {
      r = x.guard_call(n);
    } finally {
      this.#signal = undefined;
      this.#deadline = 0;
    }
    return this.#view(r);
  }

  /**
   * Whether the module would like collect() run before its next call
   * (guest/ABI.md, guard_collect_due). False for a module built before it.
   */
  collectDue() {
    try {
      return this.#x.guard_collect_due?.() === 1;
    } catch {
      return false; // a trap here shows on the next call, which replaces the instance
    }
  }

  /** Runs the module's garbage collection now (guard_collect). */
  collect() {
    this.#x.guard_collect?.();
  }

  /** The module's guard_stats, parsed. */
  stats() {
    return JSON.parse(new TextDecoder().decode(this.#view(this.#x.guard_stats())));
  }

  /** Linear memory size in bytes. */
  get memorySize() {
    return this.#x.memory.buffer.byteLength;
  }

  #view(ptrLen) {
    const ptr = Number(ptrLen >> 32n);
    const len = Number(ptrLen & MASK32);
    const u8 = this.#bytes();
    if (ptr + len > u8.length) throw new Error('mrtr: guest response out of range');
    return u8.subarray(ptr, ptr + len);
  }

  /** @internal for the trap test: the instance's linear memory. */
  get memoryForTests() {
    return this.#x.memory;
  }
}
