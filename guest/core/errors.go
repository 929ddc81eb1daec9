package core

// Stable error codes. They are part of the ABI (guest/ABI.md): hosts in
// every language map them to the same JSON-RPC errors, and tests compare
// them across runtimes. Never renumber or reuse one; add new ones.
const (
	// The request envelope.
	CodeRequestTooLarge    = "mrtr.request.too_large"
	CodeRequestMalformed   = "mrtr.request.malformed"
	CodeRequestVersion     = "mrtr.request.unsupported_version"
	CodeRequestUnknownOp   = "mrtr.request.unknown_op"
	CodeRequestNoEntropy   = "mrtr.request.missing_entropy"
	CodeNotConfigured      = "mrtr.config.missing"
	CodeConfigInvalid      = "mrtr.config.invalid"
	CodeInternal           = "mrtr.internal"
	CodeInterrupted        = "mrtr.call.interrupted"
	CodeJSONSyntax         = "mrtr.json.syntax"
	CodeInvalidUTF8        = "mrtr.json.invalid_utf8"
	CodeDuplicateKey       = "mrtr.json.duplicate_key"
	CodeCaseDuplicateKey   = "mrtr.json.case_duplicate_key"
	CodeTooDeep            = "mrtr.json.too_deep"
	CodeNumberOutOfRange   = "mrtr.json.number_out_of_range"
	CodeArgumentsMalformed = "mrtr.arguments.malformed"

	// Lint findings on what a server is about to send.
	CodeFormSecretField     = "mrtr.form.secret_field"
	CodeFormInvalidSchema   = "mrtr.form.invalid_schema"
	CodeFormNotFlat         = "mrtr.form.not_flat"
	CodeFormUnsupportedType = "mrtr.form.unsupported_type"
	CodeFormUnsupportedKey  = "mrtr.form.unsupported_keyword"
	CodeFormBadKeywordValue = "mrtr.form.invalid_keyword_value"
	CodeFormFormat          = "mrtr.form.unsupported_format"
	CodeFormRequiredUnknown = "mrtr.form.required_unknown"
	CodeFormInvalidDefault  = "mrtr.form.invalid_default"
	CodeFormEnum            = "mrtr.form.invalid_enum"
	CodeFormLegacyEnum      = "mrtr.form.legacy_enum_names"
	CodeFormSchemaDialect   = "mrtr.form.schema_dialect"
	CodeMissingMessage      = "mrtr.request.missing_message"
	CodeUnknownParam        = "mrtr.request.unknown_param"
	CodeURLInvalid          = "mrtr.url.invalid"
	CodeURLNotHTTPS         = "mrtr.url.not_https"
	CodeURLCredentials      = "mrtr.url.credentials"
	CodeURLPersonalData     = "mrtr.url.personal_data"
	CodeInputUnknownMethod  = "mrtr.input.unknown_method"
	CodeInputInvalidParams  = "mrtr.input.invalid_params"
	CodeInputKey            = "mrtr.input.invalid_key"
	CodeInputDeprecated     = "mrtr.input.deprecated"
	CodeMethodNotAllowed    = "mrtr.request.method_not_allowed"

	// Asking and resuming.
	CodeCapabilityMissing  = "mrtr.capability.missing"
	CodeStateInvalid       = "mrtr.state.invalid"
	CodeResponsesMalformed = "mrtr.responses.malformed"
	CodeRoundsExceeded     = "mrtr.rounds.exceeded"

	// A proxy's upstream (upstream.ask).
	CodeUpstreamResult = "mrtr.upstream.invalid_result"

	// A deployment policy refused (the "policy" of a round).
	CodePolicyDenied = "mrtr.policy.denied"
)

// Internal reasons for CodeStateInvalid. Clients always see the same
// message; the reason is for logs and metrics only and never carries data.
const (
	ReasonMalformed   = "malformed"
	ReasonOversize    = "oversize"
	ReasonUnknownKey  = "unknown_key"
	ReasonTampered    = "tampered"
	ReasonExpired     = "expired"
	ReasonNotYetValid = "not_yet_valid"
	ReasonPrincipal   = "principal"
	ReasonMethod      = "method"
	ReasonTarget      = "target"
	ReasonArguments   = "arguments"
	ReasonAudience    = "audience"
	ReasonVersion     = "version"
	// ReasonUpstream: a proxy's state presented at a proxy for another
	// upstream, or a server's state presented at a proxy (and back).
	ReasonUpstream = "upstream"
	// ReasonPolicy: an approval's state presented under another policy
	// version (a reload voids it), or a state presented as an approval
	// that was not sealed as one (and back).
	ReasonPolicy = "policy"
)

// StateInvalidMessage is the one client-facing text for every rejected
// requestState, so that a client learns nothing about why.
const StateInvalidMessage = "invalid or expired requestState"

// Error is an error with a stable code. Message is safe to show to the
// caller; Reason (state errors and policy refusals) is for logs.
type Error struct {
	Code    string
	Message string
	Reason  string
	// Data is extra JSON for the caller (findings, requiredCapabilities).
	Data []byte
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func newError(code, msg string) *Error { return &Error{Code: code, Message: msg} }

func stateError(reason string) *Error {
	return &Error{Code: CodeStateInvalid, Message: StateInvalidMessage, Reason: reason}
}
