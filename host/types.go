package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/guest/core"
)

// Request is the incoming MCP request a tool, prompt or resource handler
// is serving: who asks, what, and what the client sent back. It is the
// same for the first call and for every retry.
type Request struct {
	// Principal is the authenticated caller (for example the token's
	// subject). A requestState opens only for the principal it was sealed
	// for.
	Principal string
	// Scopes and Claims are what the caller's access token grants and
	// says (only the claims the deployment lets the policy see, as a JSON
	// object); the policy sees them as input.scopes and input.claims.
	Scopes []string
	Claims json.RawMessage
	// Method is "tools/call", "prompts/get" or "resources/read".
	Method string
	// Target is the tool or prompt name, or the resource URI.
	Target string
	// Arguments are the request's arguments as sent; the state is bound to
	// their RFC 8785 canonical form, so a retry with other arguments fails.
	Arguments json.RawMessage
	// Capabilities is the ClientCapabilities object from this request's
	// _meta (io.modelcontextprotocol/clientCapabilities). Capabilities are
	// per request: never reuse another request's.
	Capabilities json.RawMessage
	// InputResponses and RequestState are what a retry carries.
	InputResponses json.RawMessage
	RequestState   string
}

// IsRetry reports whether the request carries a requestState to resume.
func (r *Request) IsRetry() bool { return r.RequestState != "" }

// InputRequest is one request the server wants the client to fulfil,
// keyed by a name the server chooses.
type InputRequest struct {
	Key    string
	Method string
	Params json.RawMessage
}

// Form asks the user to fill in a form (elicitation/create, form mode).
// schema is the requestedSchema: a flat object of primitive properties.
func Form(key, message string, schema json.RawMessage) InputRequest {
	params := struct {
		Mode            string          `json:"mode"`
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}{"form", message, schema}
	b, err := json.Marshal(params)
	if err != nil {
		// An invalid schema is reported by the guard's lint, not here.
		b = nil
	}
	return InputRequest{Key: key, Method: "elicitation/create", Params: b}
}

// URL asks the user to open a page the server controls (elicitation/create,
// URL mode): the only right way to collect secrets such as API keys.
func URL(key, message, url string) InputRequest {
	b, _ := json.Marshal(struct {
		Mode    string `json:"mode"`
		Message string `json:"message"`
		URL     string `json:"url"`
	}{"url", message, url})
	return InputRequest{Key: key, Method: "elicitation/create", Params: b}
}

// Sampling asks the client's model (sampling/createMessage; deprecated in
// 2026-07-28). params are CreateMessageRequestParams.
func Sampling(key string, params json.RawMessage) InputRequest {
	return InputRequest{Key: key, Method: "sampling/createMessage", Params: params}
}

// Roots asks for the client's roots (roots/list; deprecated in 2026-07-28).
func Roots(key string) InputRequest {
	return InputRequest{Key: key, Method: "roots/list"}
}

// InputRequiredResult is the result a handler returns when it needs
// input: resultType "input_required", the input requests and the sealed
// requestState. It marshals to the exact wire JSON.
type InputRequiredResult struct {
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
	RequestState  string                     `json:"requestState,omitempty"`
}

// Status is how a retry ended.
type Status string

const (
	// Complete: every answer is in and valid. Act now (through Once).
	Complete Status = "complete"
	// InputRequired: something is missing or wrong; return
	// Outcome.InputRequired to the client.
	InputRequired Status = "input_required"
	// Declined: the user said no. Nothing may happen.
	Declined Status = "declined"
	// Cancelled: the user dismissed the request. Nothing happens now; the
	// user may call again.
	Cancelled Status = "cancelled"
)

// Outcome is the guard's verdict on a retry.
type Outcome struct {
	Status Status
	// OperationID identifies the logical request across all its rounds;
	// it is the key for exactly-once side effects.
	OperationID string
	Round       int
	// Answers holds, when Status is Complete, every accepted answer of
	// every round by input request key: an ElicitResult ({"action":
	// "accept","content":{…}}), a CreateMessageResult or a ListRootsResult.
	Answers map[string]json.RawMessage
	// AnswersDigest is the guard core's digest of Answers (64 hex;
	// guest/ABI.md): the key Once claims the operation with, the same in
	// every runtime and for every spelling of equal answers.
	AnswersDigest string
	// Declined and Cancelled name the keys the user declined or cancelled.
	Declined  []string
	Cancelled []string
	// Progress is the application's own bytes given to Ask.
	Progress []byte
	// InputRequired is the result to return when Status is InputRequired.
	InputRequired *InputRequiredResult
	// remember is how long Once keeps the outcome (before the ledger's
	// margin): the core's rememberSeconds.
	remember time.Duration
}

// Content decodes the form content accepted for key into v.
func (o *Outcome) Content(key string, v any) error {
	raw, ok := o.Answers[key]
	if !ok {
		return fmt.Errorf("mrtr: no answer for %q", key)
	}
	var a struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return err
	}
	if a.Content == nil {
		return fmt.Errorf("mrtr: the answer for %q has no form content", key)
	}
	return json.Unmarshal(a.Content, v)
}

// Finding is one lint finding on an input request.
type Finding struct {
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Key      string `json:"key,omitempty"`
	Field    string `json:"field,omitempty"`
	Message  string `json:"message"`
}

// The severities of a Finding: an error refuses the ask.
const (
	SeverityError   = core.SeverityError
	SeverityWarning = core.SeverityWarning
)

// Error is an error from the guard, with a stable code (see the Code
// constants). Message is safe to send to the client; Reason, set for
// rejected states, says why for logs and metrics and carries no data.
type Error struct {
	Code    string
	Message string
	Reason  string
	Data    json.RawMessage
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Is matches errors by code, so errors.Is(err, host.ErrInvalidState)
// works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// JSONRPCCode is the JSON-RPC error code to answer with.
func (e *Error) JSONRPCCode() int {
	switch e.Code {
	case CodeCapabilityMissing:
		return -32021
	case CodeInternal, CodeNotConfigured, CodeConfigInvalid, CodeUnavailable, CodeLedgerUnavailable, CodeInProgress, core.CodeInterrupted, core.CodeUpstreamResult:
		return -32603
	}
	return -32602
}

// Findings returns the lint findings carried by an ask that was refused.
func (e *Error) Findings() []Finding {
	var d struct {
		Findings []Finding `json:"findings"`
	}
	_ = json.Unmarshal(e.Data, &d)
	return d.Findings
}

// Stable error codes; guest/ABI.md lists every one.
const (
	CodeStateInvalid       = core.CodeStateInvalid
	CodeCapabilityMissing  = core.CodeCapabilityMissing
	CodeRoundsExceeded     = core.CodeRoundsExceeded
	CodeResponsesMalformed = core.CodeResponsesMalformed
	CodeFormSecretField    = core.CodeFormSecretField
	CodeRequestTooLarge    = core.CodeRequestTooLarge
	CodeInternal           = core.CodeInternal
	CodeNotConfigured      = core.CodeNotConfigured
	CodeConfigInvalid      = core.CodeConfigInvalid
	// Host-side codes.
	CodeUnavailable       = "mrtr.host.unavailable"
	CodeLedgerUnavailable = "mrtr.ledger.unavailable"
	CodeInProgress        = "mrtr.ledger.in_progress"
	CodeConflict          = "mrtr.ledger.conflict"
	CodeNotComplete       = "mrtr.ledger.not_complete"
	CodePolicyDenied      = "mrtr.policy.denied"
)

// Sentinels for errors.Is.
var (
	ErrInvalidState      = &Error{Code: CodeStateInvalid}
	ErrCapabilityMissing = &Error{Code: CodeCapabilityMissing}
	ErrRoundsExceeded    = &Error{Code: CodeRoundsExceeded}
	ErrSecretField       = &Error{Code: CodeFormSecretField}
)

// AsError returns err as an *Error, if it is one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
