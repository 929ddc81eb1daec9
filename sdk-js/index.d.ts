// Type declarations for mrtr-wasm (hand-written; kept in step with
// index.js and src/*.js, and checked by test/types.test.mjs).

/** JSON as the core reads and writes it. */
export type JSONValue = null | boolean | number | string | JSONValue[] | { [key: string]: JSONValue };

/** Raw JSON text (or UTF-8 bytes) passed to the core as received; checked to be exactly one value. */
export interface RawJSON {
  readonly __mrtrRawJSON: never;
}
export function rawJSON(text: string | Uint8Array): RawJSON;

/** A JSON value given to the guard: a JS value (serialised with JSON.stringify) or raw JSON. */
export type JSONInput = unknown;

// --- requests ---------------------------------------------------------------

/** The incoming MCP request a tool, prompt or resource handler is serving: the same for the first call and every retry. */
export interface Request {
  /** The authenticated caller; a requestState opens only for its principal. */
  principal: string;
  /** "tools/call", "prompts/get" or "resources/read". */
  method: string;
  /** The tool or prompt name, or the resource URI. */
  target: string;
  /** The request's arguments as received (bound by their RFC 8785 digest). Absent or null means {}. */
  arguments?: JSONInput | RawJSON;
  /** The ClientCapabilities of THIS request's _meta (io.modelcontextprotocol/clientCapabilities). */
  capabilities?: JSONInput | RawJSON;
  /** What a retry carries. */
  inputResponses?: JSONInput | RawJSON;
  requestState?: string;
}

/** One request the server wants the client to fulfil, keyed by a name the server chooses. */
export interface InputRequest {
  key: string;
  method: 'elicitation/create' | 'sampling/createMessage' | 'roots/list' | (string & {});
  params?: JSONInput | RawJSON;
}

/** A form (elicitation/create, form mode); schema is a flat requestedSchema. */
export function form(key: string, message: string, schema: JSONInput | RawJSON): InputRequest;
/** A page the server controls (elicitation/create, URL mode): the only right way to collect secrets. */
export function url(key: string, message: string, url: string): InputRequest;
/** sampling/createMessage (deprecated in 2026-07-28); params are CreateMessageRequestParams. */
export function sampling(key: string, params: JSONInput | RawJSON): InputRequest;
/** roots/list (deprecated in 2026-07-28). */
export function roots(key: string): InputRequest;
/** Whether the request carries a requestState to resume. */
export function isRetry(request: Partial<Request> | undefined | null): boolean;

/** The wire InputRequiredResult: return it from the handler as is. */
export interface InputRequiredResult {
  resultType: 'input_required';
  inputRequests?: Record<string, { method: string; params?: { [key: string]: JSONValue } }>;
  requestState?: string;
}

export const Status: Readonly<{
  COMPLETE: 'complete';
  INPUT_REQUIRED: 'input_required';
  DECLINED: 'declined';
  CANCELLED: 'cancelled';
}>;
export type OutcomeStatus = 'complete' | 'input_required' | 'declined' | 'cancelled';

/** The guard's verdict on a retry. answers and progress are not enumerable: logging an outcome never shows what the user typed. */
export class Outcome {
  /** Outcomes come from guard.resume; there is nothing to construct. */
  private constructor();
  status: OutcomeStatus;
  /** The logical request across all its rounds: the key for exactly-once side effects. */
  operationId: string;
  round: number;
  /** When complete: every accepted answer of every round, by input request key. */
  readonly answers: Record<string, JSONValue>;
  /** The application's own bytes given to ask({progress}). */
  readonly progress: Uint8Array | undefined;
  /** When complete: the core's digest of the answers (64 hex, guest/ABI.md), the ledger key. */
  readonly answersDigest?: string;
  /** Ended rounds (complete, declined, cancelled): how long, in seconds, a state of this operation may still open (the guard's round limit times its ttl; guest/ABI.md). guard.once keeps the result that long, plus marginMs. */
  readonly rememberSeconds?: number;
  declined?: string[];
  cancelled?: string[];
  /** When input_required: the result to return (it asks again, naming what is wrong). */
  inputRequired?: InputRequiredResult;
  /** The accepted form content for key. */
  content<T = Record<string, JSONValue>>(key: string): T;
}

/** What open() reports: the shape of a state, never its answers. */
export interface StateInfo {
  status: 'open';
  operationId: string;
  round: number;
  issuedAt: string;
  expiresAt: string;
  pending: string[];
  answered: string[];
}

export interface Finding {
  code: string;
  severity: 'error' | 'warning';
  key?: string;
  field?: string;
  message: string;
}

// --- errors -----------------------------------------------------------------

export const codes: Readonly<{
  STATE_INVALID: 'mrtr.state.invalid';
  CAPABILITY_MISSING: 'mrtr.capability.missing';
  ROUNDS_EXCEEDED: 'mrtr.rounds.exceeded';
  RESPONSES_MALFORMED: 'mrtr.responses.malformed';
  FORM_SECRET_FIELD: 'mrtr.form.secret_field';
  METHOD_NOT_ALLOWED: 'mrtr.request.method_not_allowed';
  REQUEST_TOO_LARGE: 'mrtr.request.too_large';
  REQUEST_MALFORMED: 'mrtr.request.malformed';
  REQUEST_VERSION: 'mrtr.request.unsupported_version';
  REQUEST_UNKNOWN_OP: 'mrtr.request.unknown_op';
  REQUEST_NO_ENTROPY: 'mrtr.request.missing_entropy';
  JSON_SYNTAX: 'mrtr.json.syntax';
  JSON_INVALID_UTF8: 'mrtr.json.invalid_utf8';
  JSON_DUPLICATE_KEY: 'mrtr.json.duplicate_key';
  JSON_CASE_DUPLICATE_KEY: 'mrtr.json.case_duplicate_key';
  JSON_TOO_DEEP: 'mrtr.json.too_deep';
  JSON_NUMBER_OUT_OF_RANGE: 'mrtr.json.number_out_of_range';
  ARGUMENTS_MALFORMED: 'mrtr.arguments.malformed';
  NOT_CONFIGURED: 'mrtr.config.missing';
  CONFIG_INVALID: 'mrtr.config.invalid';
  INTERRUPTED: 'mrtr.call.interrupted';
  INTERNAL: 'mrtr.internal';
  UNAVAILABLE: 'mrtr.host.unavailable';
  LEDGER_UNAVAILABLE: 'mrtr.ledger.unavailable';
  IN_PROGRESS: 'mrtr.ledger.in_progress';
  CONFLICT: 'mrtr.ledger.conflict';
  NOT_COMPLETE: 'mrtr.ledger.not_complete';
  POLICY_DENIED: 'mrtr.policy.denied';
}>;

/**
 * An error from the guard with a stable code (guest/ABI.md, host/types.go).
 * message is safe to send to the MCP client; reason (rejected states) is
 * for logs and metrics; data is JSON for the caller.
 */
export class GuardError extends Error {
  constructor(code: string, message: string, extra?: { reason?: string; data?: unknown });
  readonly name: 'GuardError';
  code: string;
  reason: string;
  data: any;
  /** -32602, -32021 (capability missing) or -32603 (internal, unavailable, ledger). */
  readonly jsonRpcCode: number;
  /** Lint findings of an ask that was refused. */
  readonly findings: Finding[];
  static is(err: unknown, code?: string): err is GuardError;
  toJSON(): { code: string; message: string; reason?: string; data?: unknown };
}

// --- keys -------------------------------------------------------------------

/** Keys that seal and open requestState; never shown by toString, JSON.stringify or util.inspect. */
export class Keyring {
  private constructor();
  readonly size: number;
  toString(): string;
  toJSON(): string;
}
/** Reads keys in the MRTR_KEYS format (k4.local keys separated by commas, spaces or new lines; # comments). */
export function parseKeys(text: string): Keyring;
/** MRTR_KEYS from env (default process.env where there is one; a Worker passes its env); undefined when unset or blank. */
export function keysFromEnv(env?: Record<string, unknown>): Keyring | undefined;
/** A key file in the MRTR_KEYS format (Node, Deno, Bun: runtimes with a file system). */
export function loadKeyFile(path: string): Promise<Keyring>;
/** A new random k4.local key. */
export function generateKey(): string;

// --- the ledger ---------------------------------------------------------------

export const ClaimStatus: Readonly<{ ACQUIRED: 'acquired'; IN_PROGRESS: 'in_progress'; FINISHED: 'finished'; CONFLICT: 'conflict' }>;

export type Claim =
  | { status: 'acquired'; token: string }
  | { status: 'in_progress' }
  | { status: 'finished'; result: string }
  | { status: 'conflict' };

export type LedgerEntry =
  | { state: 'absent' }
  | { state: 'pending'; fingerprint: string }
  | { state: 'done'; fingerprint: string; result: string };

/**
 * Records which operations ran and what they returned; every method is
 * atomic with respect to every other caller of the same store. The
 * semantics are the Go ledger's (ledger/ledger.go).
 */
export interface Ledger {
  /** Takes op unless it is held (lease running) or done. fp is a 64-hex fingerprint. */
  claim(op: string, fp: string, leaseMs: number): Promise<Claim>;
  /** Records result (JSON text) for ttlMs; throws LedgerLostError when another claim holds or finished op. */
  finish(op: string, token: string, fp: string, result: string, ttlMs: number): Promise<void>;
  /** Drops op's claim if token still holds it and it is not finished. */
  release(op: string, token: string): Promise<void>;
  get?(op: string): Promise<LedgerEntry>;
}

export class LedgerLostError extends Error {}

/**
 * The in-process ledger, bounded in entries (default 100000), in bytes of
 * stored results, operation ids and tokens (maxBytes, default 64 MiB) and
 * time. Full, it refuses new claims ("ledger: full", retryable).
 */
export class MemoryLedger implements Ledger {
  constructor(options?: { maxEntries?: number; maxBytes?: number });
  claim(op: string, fp: string, leaseMs: number): Promise<Claim>;
  finish(op: string, token: string, fp: string, result: string, ttlMs: number): Promise<void>;
  release(op: string, token: string): Promise<void>;
  get(op: string): Promise<LedgerEntry>;
  readonly size: number;
  /** What the live entries count against maxBytes. */
  readonly bytes: number;
  close(): Promise<void>;
}

/** The smallest Redis client interface: node-redis (sendCommand), ioredis (call), or a function. */
export type RedisClientLike =
  | { sendCommand(args: string[]): Promise<unknown> }
  | { call(...args: string[]): Promise<unknown> }
  | ((args: string[]) => Promise<unknown>);

/** The Redis ledger over the application's client; key prefix default "mrtr:op:" (the Go default). */
export class RedisLedger implements Ledger {
  constructor(client: RedisClientLike, options?: { prefix?: string });
  claim(op: string, fp: string, leaseMs: number): Promise<Claim>;
  finish(op: string, token: string, fp: string, result: string, ttlMs: number): Promise<void>;
  release(op: string, token: string): Promise<void>;
  get(op: string): Promise<LedgerEntry>;
  ping(): Promise<void>;
}
export function redisLedger(client: RedisClientLike, options?: { prefix?: string }): RedisLedger;

/**
 * What an operation is claimed with (64 hex): the guard core's answers
 * digest (`outcome.answersDigest`, guest/ABI.md), the same in every runtime.
 * Takes an Outcome from resume or the digest itself.
 */
export function fingerprint(answers: Outcome | string): string;

export interface OnceResult<T> {
  result: T;
  /** true when the effect had already run and this is its stored result. */
  replay: boolean;
  operationId: string;
  /**
   * false when the effect ran but the ledger did not record it (reason
   * "not_recorded") or recorded another run first because the lease ran
   * out ("lease_lost"): the effect happened, answer with its result.
   */
  recorded: boolean;
  reason?: 'not_recorded' | 'lease_lost';
}

export interface OnceOptions {
  /** Use this ledger instead of the guard's. */
  ledger?: Ledger;
  /** How long a claim holds before it counts as abandoned, in ms (default 30000); the effect's signal aborts then. */
  leaseMs?: number;
  /** How long a duplicate waits for the first run's result, in ms (default 2000), then mrtr.ledger.in_progress. */
  waitMs?: number;
  /** Added to the state's lifetime to get how long a finished operation is remembered, in ms (default 60000). */
  marginMs?: number;
  /** Bound on each ledger call, in ms (default 1000): one that runs over fails closed. */
  ledgerTimeoutMs?: number;
}

// --- policies -----------------------------------------------------------------

export interface PolicyQuery {
  principal: string;
  method: string;
  target: string;
  /** The guard's own TTL (seconds) and round limit, which the policy may narrow. */
  ttl: number;
  maxRounds: number;
  /** Only on ask. */
  inputs?: InputRequest[];
  /** The policy input as the guard core built it (JSON text, guest/ABI.md policy.input): what OPA evaluates. */
  input: string;
}

/** One reason a policy refused (host.PolicyDenial). */
export interface PolicyDenial {
  code: string;
  rule: string;
  key?: string;
  field?: string;
  message: string;
}

/**
 * A policy's answer, which the guard core reads (guest/ABI.md, "policy"):
 * only allow: true with no denial and no code allows; a missing or
 * malformed decision refuses.
 */
export interface PolicyDecision {
  allow: boolean;
  /** The first denial. */
  code?: string;
  rule?: string;
  message?: string;
  denials?: PolicyDenial[];
  /** The limits for this tool: maxRounds, and ttl in seconds. */
  maxRounds?: number;
  ttl?: number;
}

/** A decision document as the policy wrote it, for the guard core to read (null: no decision). */
export interface DocumentDecision {
  document: unknown;
}

export interface Policy {
  ask(q: PolicyQuery): PolicyDecision | DocumentDecision | Promise<PolicyDecision | DocumentDecision>;
  resume(q: PolicyQuery): PolicyDecision | DocumentDecision | Promise<PolicyDecision | DocumentDecision>;
}

/** A decision document as the guard core reads it (Guard.policyDecision). */
export interface DecisionDocument {
  allow: boolean;
  deny: PolicyDenial[];
  max_rounds: number;
  ttl_seconds: number;
  rules: string[];
}

/** A policy loaded from an OPA Wasm bundle. */
export interface BundlePolicy extends Policy {
  entrypoints: string[];
  /** The entrypoint's decision document as the policy wrote it (undefined: no decision). */
  raw(entrypoint: string, input: unknown): unknown;
  ask(q: PolicyQuery): DocumentDecision;
  resume(q: PolicyQuery): DocumentDecision;
  /** Replaces the data file (the document at mrtr.config). */
  setData(config: unknown): void;
}

export const ASK_ENTRYPOINT: 'mrtr/ask/decision';
export const RESUME_ENTRYPOINT: 'mrtr/resume/decision';

/** The bundle's parts: policy.wasm (bytes, or compiled where nothing compiles at run time: Workers) and its data document. */
export interface PolicyParts {
  wasm: Uint8Array | ArrayBuffer | WasmModule;
  data?: unknown;
}
export interface PolicyOptions {
  /** Replaces the bundle's data file (the document at mrtr.config). */
  data?: unknown;
  /** The @open-policy-agent/opa-wasm module (its Node entry or its browser ESM build), where it cannot be imported by name. */
  opa?: object;
}
/** Loads the OPA Wasm bundle `mrtr-wasm policy build` writes (needs @open-policy-agent/opa-wasm): a path, a URL (fetched unless file:), its bytes or its parts. */
export function loadPolicy(source: string | URL | Uint8Array | ArrayBuffer | PolicyParts, options?: PolicyOptions): Promise<BundlePolicy>;
/** The same from bundle bytes (tar.gz) or its parts. */
export function policyFromBundle(bundle: Uint8Array | ArrayBuffer | PolicyParts, options?: PolicyOptions): Promise<BundlePolicy>;

// --- the guard ----------------------------------------------------------------

/** A compiled WebAssembly.Module (typed loosely so the declarations need no DOM lib). */
export type WasmModule = object;
/** A WebAssembly.Instance. */
export type WasmInstance = object;

/** One instance's WASI layer: its imports, and start (binds memory, runs the reactor's _initialize). */
export interface WasiLayer {
  imports: Record<string, Record<string, unknown>>;
  start(instance: WasmInstance): void;
}
/** The platform layer: WASI preview1 imports and randomness. */
export interface Platform {
  name: string;
  init?(): Promise<void>;
  createWasi(): WasiLayer;
  randomFill(b: Uint8Array): void;
}
/** guard.wasm as createGuard and loadModule take it. */
export type ModuleSource = WasmModule | ArrayBuffer | ArrayBufferView | Response | Promise<Response> | URL | string;

export interface GuardOptions {
  /** Keys: a Keyring, MRTR_KEYS text or an array of k4.local keys. The first seals, all open. */
  keys: Keyring | string | string[];
  /** This server's name; states sealed for another audience do not open here. Default "mrtr-wasm". */
  audience?: string;
  /** Consulted on every ask and resume. */
  policy?: Policy;
  /** requestState lifetime in seconds, 1..86400 (default 300); asks and policies only narrow it. */
  ttl?: number;
  /** Rounds of one logical request (default 3); asks and policies only narrow it. */
  maxRounds?: number;
  /** requestState size cap in bytes, 512..1048576 (default 8192); the Go host's WithMaxStateBytes. */
  maxStateBytes?: number;
  /** @deprecated Use maxStateBytes (the same value, in bytes); giving both is an error. */
  maxStateSize?: number;
  /** Ready instances kept (default 1; calls are synchronous, spares replace a failed instance without a wait). */
  poolSize?: number;
  /** The ledger once() uses (default: a MemoryLedger). */
  ledger?: Ledger;
  /** Defaults for once(); see OnceOptions. */
  leaseMs?: number;
  waitMs?: number;
  marginMs?: number;
  ledgerTimeoutMs?: number;
  /** Bound on one call into the core, in ms (default 5000): a call past it stops at a checkpoint. */
  callTimeout?: number;
  /** Guest heap limit in MiB, a whole number (default 16; 0 keeps the default); the Go host's WithMemoryLimitMiB. */
  memoryLimitMiB?: number;
  /** @deprecated Use memoryLimitMiB (the same value, in MiB); giving both is an error. */
  memoryLimit?: number;
  /**
   * guard.wasm: a compiled WebAssembly.Module (Cloudflare Workers: the imported module), its bytes, a fetch
   * Response, a URL (fetched; file: read) or a file path (Node, Deno, Bun). Default: the bundled guard.wasm.
   */
  module?: ModuleSource;
}

export interface AskOptions {
  /** The application's own bytes, sealed into the state (at most 4 KiB); a string is UTF-8 encoded. */
  progress?: Uint8Array | string;
  /** A complete outcome whose logical request continues: same operation id, its answers carried. */
  after?: Outcome;
  /** Seconds; narrows the guard's ttl for this state (a longer one is not used). */
  ttl?: number;
  /** Narrows the guard's round limit (a higher one is not used). */
  maxRounds?: number;
  signal?: AbortSignal;
}

export interface ResumeOptions {
  /** The round limit for this resume (the Go policy sets it per tool); only narrows the guard's. */
  maxRounds?: number;
  /** Seconds, for the state of a further round; only narrows the guard's ttl. */
  ttl?: number;
  signal?: AbortSignal;
}

export interface Guard {
  /** PASERK ids (k4.lid) of the keys, primary first: safe to log. */
  readonly keyIds: string[];
  readonly audience: string;
  readonly ledger: Ledger;
  /** Lints every input request, checks capabilities, seals a new requestState. */
  ask(request: Request, inputs?: InputRequest[], options?: AskOptions): Promise<InputRequiredResult>;
  /** Opens the state, validates every answer, says what happened. */
  resume(request: Request, options?: ResumeOptions): Promise<Outcome>;
  /** Checks a state as resume does; reports its shape, never its answers. */
  open(request: Request, options?: { signal?: AbortSignal }): Promise<StateInfo>;
  /** Reads a policy's decision document as the core reads it for every host: deny wins, an allow needs both limits (undefined or null: no decision). */
  policyDecision(document: unknown): Promise<DecisionDocument>;
  lint(inputRequest: Pick<InputRequest, 'method' | 'params'>): Promise<Finding[]>;
  lintSchema(schema: JSONInput | RawJSON): Promise<Finding[]>;
  /** Runs effect at most once per logical request (its result must be JSON-serialisable). */
  once<T>(outcome: Outcome, effect: (ctx: { operationId: string; signal: AbortSignal }) => T | Promise<T>, options?: OnceOptions): Promise<OnceResult<Awaited<T>>>;
  /** Key rotation: a call sees the old keys or the new, never a mix. */
  setKeys(keys: Keyring | string | string[]): Promise<void>;
  /** The module's own view of its entropy, clock and memory. */
  stats(): Promise<{ random: string; nowMs: number; heapAlloc: number; heapSys: number; numGC: number; collections: number; memoryLimit: number }>;
  close(): Promise<void>;
}

/** Creates a guard over guard.wasm (options.module, else the bundled one) through the portable WASI layer. */
export function createGuard(options: GuardOptions): Promise<Guard>;
/** Creates a guard over a compiled module with another platform layer. */
export function createGuardWith(platform: Platform, module: WasmModule, options: GuardOptions): Promise<Guard>;
/** The platform layer every runtime uses: wasiShim() and crypto.getRandomValues. */
export const platform: Platform;
/** guard.wasm compiled, from a module, bytes, a Response, a URL or a file path. */
export function loadModule(source: ModuleSource): Promise<WasmModule>;
/** The guard.wasm this package ships; undefined where modules have no URL (Workers). */
export const wasmURL: URL | undefined;

/** A WASI preview1 layer (src/wasi.js): exactly guard.wasm's imports, over crypto.getRandomValues, Date.now and performance.now. */
export function wasiShim(): WasiLayer & {
  /** Binds the layer to a memory (start does it). */
  attach(memory: object): void;
  /** The code the guest passed to proc_exit, once it has. */
  readonly exitCode: number | undefined;
};
/** Thrown by proc_exit: the instance is finished (the guard replaces it). */
export class WASIExit extends Error {
  readonly code: number;
}
