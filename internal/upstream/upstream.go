package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// Upstream is one MCP server the proxy forwards to. Implementations are
// safe for concurrent use.
type Upstream interface {
	// Call sends one JSON-RPC request (raw bytes, with the client's id) and
	// returns the final response to it, with that same id (a transport that
	// multiplexes ids on one pipe rewrites and restores them). Messages that
	// arrive before the response (notifications, progress, logging, and
	// server-to-client requests) go to onMessage in order as they arrive; if
	// onMessage returns an error, Call stops and returns it. h holds per-call
	// headers (Mcp-Method, Mcp-Name, MCP-Protocol-Version, traceparent, a
	// forwarded principal); a transport without headers may ignore them.
	// Failures of the upstream are *Error.
	Call(ctx context.Context, msg []byte, h http.Header, onMessage func(raw []byte) error) ([]byte, error)
	// Send delivers one message that has no response: a notification, or
	// the proxy's error reply to a server-to-client request.
	Send(ctx context.Context, msg []byte, h http.Header) error
	// ID names this upstream stably across restarts and replicas (the URL,
	// or the command line); it is sealed into the proxy's requestState so
	// a state opens only at a proxy for the same upstream.
	ID() string
	// Health is nil while the upstream can take calls.
	Health() error
	// Close stops the transport; calls in flight fail with CodeClosed.
	Close() error
}

// Stable error codes of an upstream failure.
const (
	// CodeUnavailable: refused connection, a 5xx, a crashed or restarting
	// child. Retryable.
	CodeUnavailable = "mrtr.upstream.unavailable"
	// CodeTimeout: no complete answer within the upstream timeout. Retryable.
	CodeTimeout = "mrtr.upstream.timeout"
	// CodeTooLarge: a body or message over the size limit. Retryable (the
	// next call is served), though the same call will fail the same way.
	CodeTooLarge = "mrtr.upstream.too_large"
	// CodeBadResponse: the bytes are not a JSON-RPC answer to the call
	// (garbage, a wrong content type, a stream that ended without the
	// response). Retryable.
	CodeBadResponse = "mrtr.upstream.bad_response"
	// CodeClosed: the transport was closed by the proxy. Not retryable here.
	CodeClosed = "mrtr.upstream.closed"
)

// JSONRPCCode is the JSON-RPC error code the proxy answers an upstream
// failure with (internal error; data.code says which).
const JSONRPCCode = -32603

// Error is an upstream failure. Message is safe to send to the client: it
// never holds upstream headers, credentials or body bytes.
type Error struct {
	Code    string
	Message string
	Err     error // the cause, for logs; may be nil
	// RetryAfter, when set, is a refusal for want of room: when to try
	// again (the proxy answers -32000, HTTP 503 with Retry-After).
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func (e *Error) Unwrap() error { return e.Err }

// ErrorCode is the stable code, for spans and logs (observe.EndStep).
func (e *Error) ErrorCode() string { return e.Code }

// Is matches by code, so errors.Is(err, &Error{Code: CodeTimeout}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Retryable says whether the same call may succeed if sent again.
func (e *Error) Retryable() bool { return e.Code != CodeClosed }

// Data is the JSON-RPC error data: {"code": …, "retryable": …}, and
// "retryAfter" (seconds) when set.
func (e *Error) Data() json.RawMessage {
	b, _ := json.Marshal(struct {
		Code       string `json:"code"`
		Retryable  bool   `json:"retryable"`
		RetryAfter int    `json:"retryAfter,omitempty"`
	}{e.Code, e.Retryable(), e.RetryAfterSeconds()})
	return b
}

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up (0: none).
func (e *Error) RetryAfterSeconds() int {
	if e.RetryAfter <= 0 {
		return 0
	}
	return int((e.RetryAfter + time.Second - 1) / time.Second)
}

// AsError returns err as an *Error, if it is one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Errorf builds an *Error with a fixed client-safe message and a cause.
func Errorf(code, message string, cause error) *Error {
	return &Error{Code: code, Message: message, Err: cause}
}

type streamStartKey struct{}

// WithStreamStart returns a context whose calls report, through f, that
// the upstream answers with an event stream (before its first event), so
// the proxy can answer the same way. Transports without streams never
// call it.
func WithStreamStart(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, streamStartKey{}, f)
}

func streamStarted(ctx context.Context) {
	if f, ok := ctx.Value(streamStartKey{}).(func()); ok && f != nil {
		f()
	}
}

type streamKey struct{}

// AsStream marks ctx for a call whose answer is a stream that lasts as
// long as the client keeps it open (subscriptions/listen): the upstream
// timeout then bounds only how long the upstream takes to start
// answering over HTTP, not the stream's length. The client's context
// still ends it.
func AsStream(ctx context.Context) context.Context {
	return context.WithValue(ctx, streamKey{}, true)
}

func isStream(ctx context.Context) bool {
	v, _ := ctx.Value(streamKey{}).(bool)
	return v
}

type roundsKey struct{}

// WithRounds marks ctx for a call to an upstream of the 2025 era whose
// server-to-client requests become input rounds, each waiting for a
// client's answer for as long as ctx allows (the proxy's PendingTTL): the
// upstream timeout then bounds the call only until the upstream first asks
// the client something, not the time the user takes to answer. ctx itself
// still bounds the whole call.
func WithRounds(ctx context.Context) context.Context {
	return context.WithValue(ctx, roundsKey{}, true)
}

func hasRounds(ctx context.Context) bool {
	v, _ := ctx.Value(roundsKey{}).(bool)
	return v
}

// callTimeout bounds a call's ctx by the upstream timeout d (none when d
// is 0 or the call is a stream, see AsStream). For a call WithRounds the
// bound ends at the first server-to-client request that reaches
// onMessage; the ctx it returns then ends with the caller's alone. Its
// cause on expiry is context.DeadlineExceeded either way (ctxError and
// transportError read the cause).
func callTimeout(ctx context.Context, d time.Duration, onMessage func([]byte) error) (context.Context, func([]byte) error, context.CancelFunc) {
	switch {
	case d <= 0 || isStream(ctx):
		return ctx, onMessage, func() {}
	case !hasRounds(ctx) || onMessage == nil:
		ctx, cancel := context.WithTimeout(ctx, d)
		return ctx, onMessage, cancel
	}
	ctx, cancel := context.WithCancelCause(ctx)
	t := time.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	on := func(raw []byte) error {
		if isServerRequest(raw) {
			t.Stop() // a round: from now on the caller's ctx bounds it
		}
		return onMessage(raw)
	}
	return ctx, on, func() { t.Stop(); cancel(context.Canceled) }
}

// isServerRequest reports whether raw is a JSON-RPC request (an id and a
// method), as a server-to-client request is.
func isServerRequest(raw []byte) bool {
	if !bytes.Contains(raw, []byte(`"method"`)) {
		return false
	}
	m, err := parseMessage(raw)
	return err == nil && m.hasID && m.method != ""
}
