// The guard: the same API as the Go host (host/guard.go), over guard.wasm.
// Portable: the platform layer (WASI, randomness) and the compiled module
// are passed in; nothing here uses Node-only APIs.

import { seams } from './seams.js';
import { encode as b64encode, decode as b64decode } from './b64.js';
import { GuardError, codes, fromWire } from './errors.js';
import { WasmInstance } from './engine.js';
import { revealKeys, toKeyring } from './keys.js';
import { jsonString, jsonText } from './json.js';
import { MemoryLedger, msOption, runOnce } from './ledger.js';

const INSPECT = Symbol.for('nodejs.util.inspect.custom');
const decoder = new TextDecoder();
const textEncoder = new TextEncoder();

const DEFAULT_TTL = 300;
const MAX_TTL = 86400;
const DEFAULT_ROUNDS = 3;
const DEFAULT_MAX_STATE = 8192;
const DEFAULT_CALL_TIMEOUT_MS = 5000;

/** Statuses of a resume. */
export const Status = Object.freeze({
  COMPLETE: 'complete',
  INPUT_REQUIRED: 'input_required',
  DECLINED: 'declined',
  CANCELLED: 'cancelled',
});

// --- input requests ---------------------------------------------------------

/**
 * A form (elicitation/create, form mode). schema is the requestedSchema: a
 * flat object of primitive properties.
 */
export function form(key, message, schema) {
  return { key, method: 'elicitation/create', params: { mode: 'form', message, requestedSchema: schema } };
}

/** A page the server controls (elicitation/create, URL mode): the only right way to collect secrets. */
export function url(key, message, href) {
  return { key, method: 'elicitation/create', params: { mode: 'url', message, url: href } };
}

/** A request to the client's model (sampling/createMessage; deprecated in 2026-07-28). */
export function sampling(key, params) {
  return { key, method: 'sampling/createMessage', params };
}

/** A request for the client's roots (roots/list; deprecated in 2026-07-28). */
export function roots(key) {
  return { key, method: 'roots/list' };
}

/** Whether the request carries a requestState to resume. */
export function isRetry(request) {
  return typeof request?.requestState === 'string' && request.requestState !== '';
}

// The response text of the guest until its bytes: documented as is.
const RESPONSE_TEXT = Symbol('mrtr-wasm.responseText');
const POLICY_INPUT_PREFIX = '{"v":1,"ok":true,"input":';

// inputRequests writes the "inputRequests" object of ask and policy.input
// (host/guard.go appendInputRequests).
function inputRequests(inputs) {
  let s = '{';
  inputs.forEach((inp, i) => {
    if (inp === null || typeof inp !== 'object') throw new GuardError(codes.REQUEST_MALFORMED, 'an input request must be an object');
    if (i > 0) s += ',';
    s += `${jsonString('input request key', inp.key)}:{"method":${jsonString('input request method', inp.method)}`;
    const p = jsonText('params', inp.params);
    if (p !== undefined) s += `,"params":${p}`;
    s += '}';
  });
  return s + '}';
}

// --- outcome ----------------------------------------------------------------

/**
 * The guard's verdict on a retry. `answers` and `progress` are not
 * enumerable: they hold what the user typed, so neither JSON.stringify nor
 * util.inspect of an outcome shows them (only the answered keys).
 */
export class Outcome {
  constructor(r) {
    this.status = r.status;
    this.operationId = r.operationId;
    this.round = r.round;
    if (r.declined) this.declined = r.declined;
    if (r.cancelled) this.cancelled = r.cancelled;
    // The result to send when status is input_required. Not enumerable:
    // a re-ask carries the user's valid answers as defaults, and the state.
    if (r.status === Status.INPUT_REQUIRED) Object.defineProperty(this, 'inputRequired', { value: r.result, enumerable: false });
    Object.defineProperty(this, 'answers', { value: r.answers ?? {}, enumerable: false });
    Object.defineProperty(this, 'progress', {
      value: typeof r.progress === 'string' && r.progress !== '' ? b64decode(r.progress) ?? undefined : undefined,
      enumerable: false,
    });
    // The core's digest of the answers (guest/ABI.md): the ledger key.
    if (typeof r.answersDigest === 'string') Object.defineProperty(this, 'answersDigest', { value: r.answersDigest, enumerable: false });
    // How long the ledger keeps the outcome (guard.once): the core's figure.
    if (typeof r.rememberSeconds === 'number') Object.defineProperty(this, 'rememberSeconds', { value: r.rememberSeconds, enumerable: false });
  }

  /** The form content accepted for key. */
  content(key) {
    const answers = /** @type {Record<string, any>} */ (/** @type {any} */ (this).answers);
    const a = Object.hasOwn(answers, key) ? answers[key] : undefined;
    if (a === undefined) throw new GuardError(codes.REQUEST_MALFORMED, `mrtr: no answer for ${JSON.stringify(key)}`);
    if (!a || typeof a.content !== 'object' || a.content === null) {
      throw new GuardError(codes.REQUEST_MALFORMED, `mrtr: the answer for ${JSON.stringify(key)} has no form content`);
    }
    return a.content;
  }

  [INSPECT](depth, opts, inspect) {
    const shown = { ...this, answers: `[redacted: ${Object.keys(/** @type {any} */ (this).answers).join(', ') || 'none'}]`, inputRequired: /** @type {any} */ (this).inputRequired !== undefined };
    return `Outcome ${inspect(shown, opts)}`;
  }
}

// --- the guard --------------------------------------------------------------

/**
 * Creates a guard over a compiled guard.wasm with a platform layer. Most
 * code calls createGuard from the package's entry point instead, which
 * supplies the Node platform and the bundled module.
 * @param {object} platform {createWasi(), randomFill(b)}
 * @param {WebAssembly.Module} module
 * @param {object} options see index.d.ts, GuardOptions
 */
export async function createGuardWith(platform, module, options = {}) {
  const g = new Guard(platform, module, options);
  await g.setKeys(options.keys);
  return g;
}

class Guard {
  #platform;
  #module;
  #audience;
  #ttl;
  #maxRounds;
  #maxState;
  #poolSize;
  #callTimeout;
  #memoryLimit;
  #clock;
  #randomFill;
  #policy;
  #ledger;
  #conf = '';
  #keyIds = [];
  #gen = 0;
  #ready = [];
  #spawning = null;
  #closed = false;
  #collecting = false;
  #collectBetween;
  #onceDefaults;
  #testHooks;

  constructor(platform, module, o) {
    if (o === null || typeof o !== 'object') throw new GuardError(codes.CONFIG_INVALID, 'mrtr: createGuard needs options');
    this.#platform = platform;
    this.#module = module;
    this.#audience = o.audience ?? 'mrtr-wasm';
    if (typeof this.#audience !== 'string' || this.#audience === '') {
      throw new GuardError(codes.CONFIG_INVALID, 'mrtr: audience must be a non-empty string');
    }
    this.#ttl = o.ttl ?? DEFAULT_TTL;
    if (!Number.isInteger(this.#ttl) || this.#ttl < 1 || this.#ttl > MAX_TTL) {
      throw new GuardError(codes.CONFIG_INVALID, `mrtr: TTL ${this.#ttl} is outside 1..86400 seconds`);
    }
    this.#maxRounds = o.maxRounds ?? DEFAULT_ROUNDS;
    this.#maxState = unitOption(o, 'maxStateBytes', 'maxStateSize') ?? DEFAULT_MAX_STATE;
    this.#poolSize = Math.max(1, o.poolSize ?? 1);
    this.#callTimeout = o.callTimeout ?? DEFAULT_CALL_TIMEOUT_MS;
    this.#memoryLimit = unitOption(o, 'memoryLimitMiB', 'memoryLimit') ?? 0;
    const seam = o[seams] ?? {};
    this.#clock = seam.clock ?? Date.now;
    this.#randomFill = seam.random ?? ((b) => platform.randomFill(b));
    this.#policy = o.policy;
    this.#ledger = o.ledger ?? new MemoryLedger();
    this.#testHooks = seam.testHooks === true;
    // Only a benchmark turns it off, to measure the module collecting
    // inside calls (bench/tasks.bench.mjs).
    this.#collectBetween = seam.collectBetweenCalls !== false;
    this.#onceDefaults = {};
    for (const k of ['leaseMs', 'waitMs', 'marginMs', 'ledgerTimeoutMs']) if (o[k] !== undefined) this.#onceDefaults[k] = msOption(o, k, 0);
  }

  /** PASERK ids (k4.lid) of the keys, primary first: safe to log. */
  get keyIds() {
    return [...this.#keyIds];
  }

  get audience() {
    return this.#audience;
  }

  /** The ledger once() uses. */
  get ledger() {
    return this.#ledger;
  }

  /**
   * Replaces the keys. The configuration is proven on a fresh instance
   * before it is used; a call sees the old keys or the new, never a mix.
   */
  async setKeys(keys) {
    const ring = toKeyring(keys);
    const ks = revealKeys(ring);
    const conf =
      `{"v":1,"op":"configure","keys":[${ks.map((k) => JSON.stringify(k)).join(',')}],` +
      `"audience":${JSON.stringify(this.#audience)},"ttl":${this.#ttl},"maxRounds":${jsonInt('maxRounds', this.#maxRounds, codes.CONFIG_INVALID)},` +
      `"maxState":${jsonInt('maxStateBytes', this.#maxState, codes.CONFIG_INVALID)},"maxRequest":${MAX_REQUEST}}`;
    const inst = await this.#newInstance();
    const r = configure(inst, conf);
    if (!r.ok) throw fromWire(r.error);
    this.#conf = conf;
    this.#keyIds = r.keyIds ?? [];
    inst.gen = ++this.#gen;
    this.#ready.push(inst);
    while (this.#ready.length > this.#poolSize) this.#ready.shift();
  }

  async #newInstance() {
    try {
      return await WasmInstance.create(this.#module, this.#platform, { memoryLimitMiB: this.#memoryLimit });
    } catch (e) {
      throw new GuardError(codes.UNAVAILABLE, 'could not start a guard instance');
    }
  }

  // #instance returns a ready, configured instance. Calls into the module
  // are synchronous, so one instance serves every call of this thread; the
  // pool keeps spares so that replacing a failed instance costs no wait.
  async #instance() {
    let inst = this.#ready[this.#ready.length - 1];
    if (!inst) {
      this.#spawning ??= this.#newInstance().finally(() => {
        this.#spawning = null;
      });
      const fresh = await this.#spawning;
      if (this.#closed) throw closedError();
      if (!this.#ready.includes(fresh)) this.#ready.push(fresh);
      inst = this.#ready[this.#ready.length - 1];
    }
    if (inst.gen !== this.#gen) {
      let r;
      try {
        r = configure(inst, this.#conf);
      } catch {
        r = null;
      }
      if (!r?.ok) {
        this.#discard(inst);
        throw new GuardError(codes.UNAVAILABLE, 'could not configure a guard instance');
      }
      inst.gen = this.#gen;
    }
    return inst;
  }

  #discard(inst) {
    const i = this.#ready.indexOf(inst);
    if (i >= 0) this.#ready.splice(i, 1);
    if (!this.#closed && this.#poolSize > 1) this.#refill();
  }

  #refill() {
    if (this.#spawning) return;
    this.#spawning = this.#newInstance()
      .then((inst) => {
        if (!this.#closed && this.#ready.length < this.#poolSize) this.#ready.unshift(inst);
        return inst;
      })
      .catch(() => null)
      .finally(() => {
        this.#spawning = null;
      });
  }

  // #call runs one envelope and returns the parsed response; a failed
  // response becomes a GuardError.
  async #call(env, signal) {
    if (this.#closed) throw closedError();
    if (signal?.aborted) throw new GuardError(codes.UNAVAILABLE, 'guard call not started: aborted');
    // Refused before it reaches an instance: copied in, it would only grow
    // the guest's memory, which never shrinks (as host/guard.go call).
    if (env.length > MAX_REQUEST / 3 && textEncoder.encode(env).length > MAX_REQUEST) {
      throw new GuardError(codes.REQUEST_TOO_LARGE, `request is larger than ${MAX_REQUEST} bytes`);
    }
    const inst = await this.#instance();
    if (this.#closed) throw closedError();
    let text;
    try {
      text = decoder.decode(inst.call(env, this.#callTimeout, signal));
    } catch {
      // A trap or a WASI exit leaves the instance unusable: replace it
      // and keep serving.
      this.#discard(inst);
      throw new GuardError(codes.INTERNAL, 'the guard module failed; its instance was replaced');
    }
    let r;
    try {
      r = JSON.parse(text);
    } catch {
      throw new GuardError(codes.INTERNAL, 'the guard module returned an unreadable response');
    }
    if (r.interrupted === true) {
      // Stopped at a checkpoint (guest/ABI.md): discard the instance all
      // the same, so a call that ran over never leaves anything behind.
      this.#discard(inst);
      throw new GuardError(codes.UNAVAILABLE, 'guard call stopped: deadline exceeded or cancelled');
    }
    if (this.#collectBetween && !this.#collecting && inst.collectDue()) this.#collectLater(inst);
    if (!r.ok) throw fromWire(r.error);
    Object.defineProperty(r, RESPONSE_TEXT, { value: text, enumerable: false });
    return r;
  }

  // #collectLater runs the module's garbage collection in a task of its
  // own, after this call's caller has its answer: left to itself, the
  // module collects inside calls and spreads the work over hundreds of
  // them (as host/guard.go collectIdle).
  #collectLater(inst) {
    this.#collecting = true;
    setTimeout(() => {
      this.#collecting = false;
      if (this.#closed || !this.#ready.includes(inst)) return;
      try {
        inst.collect();
      } catch {
        this.#discard(inst);
      }
    }, 0);
  }

  // #policyInput has the core build the policy input (guest/ABI.md,
  // policy.input) and returns its bytes as the core wrote them: the
  // response's last member, so they are the text between the documented
  // prefix and the closing brace.
  async #policyInput(phase, request, inputs) {
    let env = `{"v":1,"op":"policy.input","decision":"${phase}","principal":${jsonString('principal', request?.principal)}`;
    env += `,"method":${jsonString('method', request?.method)},"target":${jsonString('target', request?.target)}`;
    env += `,"ttl":${jsonInt('ttl', this.#ttl)},"maxRounds":${jsonInt('maxRounds', this.#maxRounds)}`;
    if (phase === 'ask') env += ',"inputRequests":' + inputRequests(inputs);
    let r;
    try {
      r = await this.#call(env + '}');
    } catch (e) {
      if (!(e instanceof GuardError) || e.code === codes.UNAVAILABLE || e.code === codes.INTERNAL) throw e;
      throw new GuardError(codes.POLICY_DENIED, `the policy input cannot be built: ${e.message}`, { reason: 'policy_input' });
    }
    const text = r[RESPONSE_TEXT];
    return text.startsWith(POLICY_INPUT_PREFIX) && text.endsWith('}') ? text.slice(POLICY_INPUT_PREFIX.length, -1) : JSON.stringify(r.input);
  }

  // #envelope builds the common fields of ask, resume and open exactly as
  // host/guard.go does: the host's clock in Unix ms and 48 fresh random
  // bytes, then the bindings; raw JSON is checked to be one value.
  #envelope(op, req) {
    if (req === null || typeof req !== 'object') throw new GuardError(codes.REQUEST_MALFORMED, 'the request must be an object');
    let env = `{"v":1,"op":"${op}","now":${Math.trunc(this.#clock())}`;
    if (op !== 'open') {
      const rnd = new Uint8Array(48);
      this.#randomFill(rnd);
      env += `,"rand":"${b64encode(rnd)}"`;
    }
    env += `,"principal":${jsonString('principal', req.principal)},"method":${jsonString('method', req.method)},"target":${jsonString('target', req.target)}`;
    const args = jsonText('arguments', req.arguments);
    if (args !== undefined) env += `,"arguments":${args}`;
    const caps = jsonText('capabilities', req.capabilities);
    if (caps !== undefined) env += `,"capabilities":${caps}`;
    if (op !== 'ask') {
      if (op === 'resume') {
        const resp = jsonText('inputResponses', req.inputResponses, codes.RESPONSES_MALFORMED);
        if (resp !== undefined) env += `,"inputResponses":${resp}`;
      }
      env += `,"requestState":${jsonString('requestState', req.requestState)}`;
    }
    return env;
  }

  /**
   * Seals a new requestState and returns the InputRequiredResult to send.
   * Every input request is linted first: a form that asks for a secret, a
   * schema outside the form subset or a mode the client did not declare is
   * refused with a GuardError.
   */
  async ask(request, inputs = [], options = {}) {
    if (!Array.isArray(inputs)) throw new GuardError(codes.REQUEST_MALFORMED, 'inputs must be an array of input requests');
    const policy = this.#policy ? policyMember(await this.#consult('ask', request, inputs)) : '';
    let env = this.#envelope('ask', request);
    env += ',"inputRequests":' + inputRequests(inputs);
    if (options.progress !== undefined) {
      const b = typeof options.progress === 'string' ? textEncoder.encode(options.progress) : options.progress;
      if (!(b instanceof Uint8Array)) throw new GuardError(codes.REQUEST_MALFORMED, 'progress must be bytes or a string');
      if (b.length > 0) env += `,"progress":"${b64encode(b)}"`;
    }
    env += limits(options) + policy;
    const a = options.after;
    if (a !== undefined) {
      if (!a || a.status !== Status.COMPLETE) throw new GuardError(codes.REQUEST_MALFORMED, 'after needs a complete outcome');
      env += `,"after":{"operationId":${jsonString('operationId', a.operationId)},"round":${jsonInt('round', a.round)},"answers":${jsonText('answers', a.answers ?? {})}}`;
    }
    env += '}';
    const r = await this.#call(env, options.signal);
    return r.result;
  }

  /**
   * Checks a retry: opens the requestState (bound to the principal, method,
   * target, arguments and audience), validates every answer against the
   * schema that was asked and says what happened. An invalid, tampered or
   * expired state is a GuardError with code mrtr.state.invalid (JSON-RPC
   * -32602) and a reason for logs.
   */
  async resume(request, options = {}) {
    if (!isRetry(request)) throw new GuardError(codes.REQUEST_MALFORMED, 'resume needs the requestState the client echoed');
    // A refusal on resume fails the retry, as in Go: the core decides.
    const policy = this.#policy ? policyMember(await this.#consult('resume', request)) : '';
    let env = this.#envelope('resume', request);
    env += limits(options) + policy;
    env += '}';
    const r = await this.#call(env, options.signal);
    return new Outcome(r);
  }

  /** Checks a requestState as resume does and reports its shape, never its answers. */
  async open(request, options = {}) {
    const r = await this.#call(this.#envelope('open', request) + '}', options.signal);
    delete r.v;
    delete r.ok;
    return r;
  }

  /** Lints an input request without asking: the same checks ask runs. */
  async lint(inputRequest) {
    if (inputRequest === null || typeof inputRequest !== 'object') throw new GuardError(codes.REQUEST_MALFORMED, 'an input request must be an object');
    let env = `{"v":1,"op":"lint","request":{"method":${jsonString('method', inputRequest.method)}`;
    const p = jsonText('params', inputRequest.params);
    if (p !== undefined) env += `,"params":${p}`;
    return (await this.#call(env + '}}')).findings;
  }

  /** Lints a bare requestedSchema. */
  async lintSchema(schema) {
    const s = jsonText('schema', schema);
    if (s === undefined) throw new GuardError(codes.JSON_SYNTAX, 'schema is not valid JSON');
    return (await this.#call(`{"v":1,"op":"lint","schema":${s}}`)).findings;
  }

  /**
   * Runs a side effect at most once per logical request (see ledger.js):
   * the first complete retry runs effect and stores its result; a replay of
   * the same answers gets the stored result with replay: true; other
   * answers under the same operation id are a conflict.
   */
  async once(outcome, effect, options = {}) {
    // Remembered as long as any state of the operation may open: the
    // core says how long (rememberSeconds, guest/ABI.md).
    return runOnce(options.ledger ?? this.#ledger, outcome, effect, { ...this.#onceDefaults, ...options, ttlSeconds: outcome?.rememberSeconds });
  }

  /** The module's own view of its entropy, clock and memory (guard_stats). */
  async stats() {
    if (this.#closed) throw closedError();
    const inst = await this.#instance();
    return inst.stats();
  }

  /**
   * Reads a policy's decision document as the guard core reads it for
   * every host (guest/ABI.md, policy.decision): deny wins, an allow needs
   * both limits, anything malformed refuses. undefined or null: the
   * policy gave no decision.
   */
  async policyDecision(document) {
    let env = '{"v":1,"op":"policy.decision"';
    if (document !== undefined) env += `,"document":${jsonText('document', document)}`;
    return (await this.#call(env + '}')).decision;
  }

  // #consult asks the policy. Its decision goes to the core as it came
  // (policyMember), which allows or refuses it (guest/ABI.md, "policy").
  async #consult(phase, request, inputs) {
    const q = {
      principal: request?.principal,
      method: request?.method,
      target: request?.target,
      ttl: this.#ttl,
      maxRounds: this.#maxRounds,
    };
    if (phase === 'ask') q.inputs = inputs;
    // The input OPA sees, built by the core for every host alike.
    q.input = await this.#policyInput(phase, request, inputs);
    try {
      return await (phase === 'ask' ? this.#policy.ask(q) : this.#policy.resume(q));
    } catch (e) {
      if (GuardError.is(e, codes.POLICY_DENIED)) throw e;
      // The evaluation error may quote the request: keep it out.
      throw new GuardError(codes.POLICY_DENIED, 'policy evaluation failed', { reason: 'policy_error' });
    }
  }

  /** Stops every instance; calls after close fail with mrtr.host.unavailable. */
  async close() {
    this.#closed = true;
    this.#ready = [];
  }

  toString() {
    return `Guard(audience ${JSON.stringify(this.#audience)}, ${this.#keyIds.length} keys redacted)`;
  }

  toJSON() {
    return { audience: this.#audience, keyIds: this.keyIds };
  }

  [INSPECT]() {
    return this.toString();
  }

  /** @internal test hook: the instance in use (trap and memory tests); only with seams.testHooks (src/seams.js). */
  [Symbol.for('mrtr-wasm.test.instance')]() {
    if (!this.#testHooks) throw new TypeError('mrtr: test hooks are off');
    return this.#ready[this.#ready.length - 1];
  }
}

function configure(inst, conf) {
  return JSON.parse(decoder.decode(inst.call(conf)));
}

function closedError() {
  return new GuardError(codes.UNAVAILABLE, 'the guard is closed');
}

// MAX_REQUEST is the largest envelope the guard takes, as configured
// (maxRequest; the Go host's core.DefaultMaxRequest).
const MAX_REQUEST = 1 << 20;

// limits writes the caller's TTL and round limit into an ask or resume
// envelope. The core narrows the guard's own limits with them (and the
// policy's) and never widens them (guest/ABI.md); 0 or absent is no limit.
/**
 * @param {{ttl?: number, maxRounds?: number}} options
 */
function limits(options) {
  let s = '';
  /** @type {[string, number | undefined][]} */
  const given = [['ttl', options.ttl], ['maxRounds', options.maxRounds]];
  for (const [name, v] of given) {
    if (v !== undefined && v !== 0) s += `,"${name}":${jsonInt(name, v)}`;
  }
  return s;
}

// policyMember writes a policy's decision as the envelope's "policy". An
// answer that is not JSON (undefined, a function, a BigInt, a cycle) is
// null, which the core refuses.
/** @param {unknown} d */
function policyMember(d) {
  let s;
  try {
    s = JSON.stringify(d ?? null);
  } catch {
    s = undefined;
  }
  return `,"policy":${s ?? 'null'}`;
}

/**
 * @param {string} name
 * @param {number} n
 * @param {string} [code]
 */
function jsonInt(name, n, code = codes.REQUEST_MALFORMED) {
  if (!Number.isSafeInteger(n)) throw new GuardError(code, `${name} must be an integer`);
  return String(n);
}

/**
 * An option whose name says its unit (maxStateBytes, memoryLimitMiB, as
 * the Go host's WithMaxStateBytes, WithMemoryLimitMiB), or its deprecated
 * name without one; giving both is a mistake.
 * @param {Record<string, unknown>} o
 * @param {string} name
 * @param {string} deprecated
 * @returns {any}
 */
function unitOption(o, name, deprecated) {
  if (o[name] !== undefined && o[deprecated] !== undefined) {
    throw new GuardError(codes.CONFIG_INVALID, `mrtr: give ${name}, not also ${deprecated} (its deprecated name)`);
  }
  const v = o[name] ?? o[deprecated];
  if (name === 'memoryLimitMiB' && v !== undefined && !(Number.isSafeInteger(v) && /** @type {number} */ (v) >= 0)) {
    throw new GuardError(codes.CONFIG_INVALID, `mrtr: ${name} must be a whole number of MiB (0: the default)`);
  }
  return v;
}
