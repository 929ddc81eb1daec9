package host

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/mrtr-wasm/mrtr-wasm/internal/redact"
)

// Request, Outcome, InputRequiredResult, InputRequest and PolicyQuery
// carry answers, request states or the arguments and URLs of a call. They
// print only their safe fields (keys, sizes, ids, status) through fmt
// (every verb), String, GoString, slog and json.Marshal, so that logging
// one by mistake leaks nothing. InputRequiredResult's JSON is its wire
// form and stays whole; print its fields yourself where you mean to.

func (r Request) safe() []slog.Attr {
	return []slog.Attr{
		slog.String("principal", r.Principal), slog.String("method", r.Method), slog.String("target", r.Target),
		slog.Bool("retry", r.IsRetry()),
		slog.Int("argumentsBytes", len(r.Arguments)), slog.Int("inputResponsesBytes", len(r.InputResponses)),
		redact.Set("requestState", r.RequestState != ""),
	}
}

// String shows the request without its arguments, responses or state.
func (r Request) String() string { return redact.String("host.Request", r.safe()) }

// GoString is String: %#v shows no secret either.
func (r Request) GoString() string { return r.String() }

// Format prints String for every verb.
func (r Request) Format(f fmt.State, _ rune) { redact.Format(f, r.String()) }

// LogValue logs the safe fields.
func (r Request) LogValue() slog.Value { return slog.GroupValue(r.safe()...) }

// MarshalJSON is String as a JSON string.
func (r Request) MarshalJSON() ([]byte, error) { return redact.JSON(r.String()) }

func (o Outcome) safe() []slog.Attr {
	return []slog.Attr{
		slog.String("status", string(o.Status)), slog.String("operationId", o.OperationID), slog.Int("round", o.Round),
		slog.Any("answers", slices.Sorted(maps.Keys(o.Answers))),
		slog.Any("declined", o.Declined), slog.Any("cancelled", o.Cancelled),
		slog.Int("progressBytes", len(o.Progress)), slog.Bool("inputRequired", o.InputRequired != nil),
	}
}

// String shows the outcome with the keys of its answers, not their values.
func (o Outcome) String() string { return redact.String("host.Outcome", o.safe()) }

// GoString is String.
func (o Outcome) GoString() string { return o.String() }

// Format prints String for every verb.
func (o Outcome) Format(f fmt.State, _ rune) { redact.Format(f, o.String()) }

// LogValue logs the safe fields.
func (o Outcome) LogValue() slog.Value { return slog.GroupValue(o.safe()...) }

// MarshalJSON is String as a JSON string: marshal Answers yourself where
// you mean to store them.
func (o Outcome) MarshalJSON() ([]byte, error) { return redact.JSON(o.String()) }

func (r InputRequiredResult) safe() []slog.Attr {
	return []slog.Attr{
		slog.String("resultType", r.ResultType),
		slog.Any("inputRequests", slices.Sorted(maps.Keys(r.InputRequests))),
		redact.Set("requestState", r.RequestState != ""),
	}
}

// String shows the result without its requestState or request params.
func (r InputRequiredResult) String() string {
	return redact.String("host.InputRequiredResult", r.safe())
}

// GoString is String.
func (r InputRequiredResult) GoString() string { return r.String() }

// Format prints String for every verb.
func (r InputRequiredResult) Format(f fmt.State, _ rune) { redact.Format(f, r.String()) }

// LogValue logs the safe fields.
func (r InputRequiredResult) LogValue() slog.Value { return slog.GroupValue(r.safe()...) }

func (in InputRequest) safe() []slog.Attr {
	return []slog.Attr{slog.String("key", in.Key), slog.String("method", in.Method), slog.Int("paramsBytes", len(in.Params))}
}

// String shows the request without its params (a URL-mode link is a
// capability).
func (in InputRequest) String() string { return redact.String("host.InputRequest", in.safe()) }

// GoString is String.
func (in InputRequest) GoString() string { return in.String() }

// Format prints String for every verb.
func (in InputRequest) Format(f fmt.State, _ rune) { redact.Format(f, in.String()) }

// LogValue logs the safe fields.
func (in InputRequest) LogValue() slog.Value { return slog.GroupValue(in.safe()...) }

// MarshalJSON is String as a JSON string.
func (in InputRequest) MarshalJSON() ([]byte, error) { return redact.JSON(in.String()) }

func (q PolicyQuery) safe() []slog.Attr {
	keys := make([]string, len(q.Inputs))
	for i, in := range q.Inputs {
		keys[i] = in.Key
	}
	return []slog.Attr{
		slog.String("principal", q.Principal), slog.String("method", q.Method), slog.String("target", q.Target),
		slog.Any("inputs", keys), slog.Duration("ttl", q.TTL), slog.Int("maxRounds", q.MaxRounds),
	}
}

// String shows the query with its inputs' keys, not their params.
func (q PolicyQuery) String() string { return redact.String("host.PolicyQuery", q.safe()) }

// GoString is String.
func (q PolicyQuery) GoString() string { return q.String() }

// Format prints String for every verb.
func (q PolicyQuery) Format(f fmt.State, _ rune) { redact.Format(f, q.String()) }

// LogValue logs the safe fields.
func (q PolicyQuery) LogValue() slog.Value { return slog.GroupValue(q.safe()...) }

// MarshalJSON is String as a JSON string.
func (q PolicyQuery) MarshalJSON() ([]byte, error) { return redact.JSON(q.String()) }

// LogValue logs how many keys there are (Keyring's String).
func (k Keyring) LogValue() slog.Value { return slog.StringValue(k.String()) }
