// GuardError and the stable error codes. The codes are the ones in
// guest/ABI.md (from the core) and host/types.go (host-side): every host
// in every language answers with the same code for the same failure.

/** Stable error codes. */
export const codes = Object.freeze({
  // Asking and resuming (from the core).
  STATE_INVALID: 'mrtr.state.invalid',
  CAPABILITY_MISSING: 'mrtr.capability.missing',
  ROUNDS_EXCEEDED: 'mrtr.rounds.exceeded',
  RESPONSES_MALFORMED: 'mrtr.responses.malformed',
  FORM_SECRET_FIELD: 'mrtr.form.secret_field',
  METHOD_NOT_ALLOWED: 'mrtr.request.method_not_allowed',
  // The envelope and its JSON (from the core).
  REQUEST_TOO_LARGE: 'mrtr.request.too_large',
  REQUEST_MALFORMED: 'mrtr.request.malformed',
  REQUEST_VERSION: 'mrtr.request.unsupported_version',
  REQUEST_UNKNOWN_OP: 'mrtr.request.unknown_op',
  REQUEST_NO_ENTROPY: 'mrtr.request.missing_entropy',
  JSON_SYNTAX: 'mrtr.json.syntax',
  JSON_INVALID_UTF8: 'mrtr.json.invalid_utf8',
  JSON_DUPLICATE_KEY: 'mrtr.json.duplicate_key',
  JSON_CASE_DUPLICATE_KEY: 'mrtr.json.case_duplicate_key',
  JSON_TOO_DEEP: 'mrtr.json.too_deep',
  JSON_NUMBER_OUT_OF_RANGE: 'mrtr.json.number_out_of_range',
  ARGUMENTS_MALFORMED: 'mrtr.arguments.malformed',
  NOT_CONFIGURED: 'mrtr.config.missing',
  CONFIG_INVALID: 'mrtr.config.invalid',
  INTERRUPTED: 'mrtr.call.interrupted',
  INTERNAL: 'mrtr.internal',
  // Host-side codes (host/types.go).
  UNAVAILABLE: 'mrtr.host.unavailable',
  LEDGER_UNAVAILABLE: 'mrtr.ledger.unavailable',
  IN_PROGRESS: 'mrtr.ledger.in_progress',
  CONFLICT: 'mrtr.ledger.conflict',
  NOT_COMPLETE: 'mrtr.ledger.not_complete',
  POLICY_DENIED: 'mrtr.policy.denied',
});

/** @type {Set<string>} */
const INTERNAL_RPC = new Set([
  codes.INTERNAL,
  codes.NOT_CONFIGURED,
  codes.CONFIG_INVALID,
  codes.UNAVAILABLE,
  codes.LEDGER_UNAVAILABLE,
  codes.IN_PROGRESS,
]);

/**
 * An error from the guard, with a stable code. `message` is safe to send to
 * the MCP client; `reason` (rejected states) is for logs and metrics and
 * carries no request data; `data` is JSON for the caller (lint findings,
 * requiredCapabilities, the fields still wrong after the last round).
 */
export class GuardError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {{reason?: string, data?: unknown}} [extra]
   */
  constructor(code, message, extra = {}) {
    super(message);
    this.name = 'GuardError';
    this.code = code;
    this.reason = extra.reason ?? '';
    this.data = extra.data;
  }

  /** The JSON-RPC error code to answer with (the same mapping as Go's Error.JSONRPCCode). */
  get jsonRpcCode() {
    if (this.code === codes.CAPABILITY_MISSING) return -32021;
    if (INTERNAL_RPC.has(this.code)) return -32603;
    return -32602;
  }

  /** Lint findings carried by an ask that was refused. */
  get findings() {
    const f = this.data && typeof this.data === 'object' ? /** @type {{findings?: unknown}} */ (this.data).findings : undefined;
    return Array.isArray(f) ? f : [];
  }

  /** Whether err is a GuardError, optionally with this code. */
  static is(err, code) {
    return err instanceof GuardError && (code === undefined || err.code === code);
  }

  toJSON() {
    const o = { code: this.code, message: this.message };
    if (this.reason) o.reason = this.reason;
    if (this.data !== undefined) o.data = this.data;
    return o;
  }
}

/** Builds a GuardError from a response's error member. */
export function fromWire(e) {
  if (!e || typeof e !== 'object' || typeof e.code !== 'string') {
    return new GuardError(codes.INTERNAL, 'the guard module failed without an error');
  }
  return new GuardError(e.code, typeof e.message === 'string' ? e.message : '', { reason: e.reason, data: e.data });
}
