package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/observe"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
)

// Guard is what a server's handlers need of the guard: one interface,
// observe's, which the metrics and tracing wrappers share.
type Guard = observe.Guard

// Wrap records every ask, resume and effect of g in l. A record that
// cannot be written does not fail the request; onError hears of it.
func Wrap(g Guard, l *Log, onError func(error)) Guard {
	if onError == nil {
		onError = func(error) {}
	}
	return &guard{g, l, onError}
}

type guard struct {
	Guard
	log     *Log
	onError func(error)
}

func (a *guard) put(r Record) {
	if err := a.log.Append(r); err != nil {
		a.onError(err)
	}
}

func base(req *host.Request) Record {
	return Record{Principal: req.Principal, Method: req.Method, Target: req.Target, ArgumentsDigest: digestOf(req.Arguments)}
}

func (a *guard) Ask(ctx context.Context, req *host.Request, inputs []host.InputRequest, opts ...host.AskOption) (*host.InputRequiredResult, error) {
	res, err := a.Guard.Ask(ctx, req, inputs, opts...)
	r := base(req)
	if err != nil {
		r.Kind, r.Outcome, r.Rule = "form.refused", "refused", codeOf(err)
		a.put(r)
		return res, err
	}
	r.Kind, r.Fields = "form.asked", FieldsOf(res)
	a.put(r)
	return res, nil
}

func (a *guard) Resume(ctx context.Context, req *host.Request) (*host.Outcome, error) {
	out, err := a.Guard.Resume(ctx, req)
	r := base(req)
	r.Kind = "form.answered"
	if err != nil {
		r = Refusal(r, err)
	} else {
		r.Outcome, r.Round, r.OperationID, r.AnswersDigest = Outcome(out.Status), out.Round, out.OperationID, out.AnswersDigest
		if out.Status == host.InputRequired {
			r.Fields = FieldsOf(out.InputRequired)
		}
	}
	a.put(r)
	return out, err
}

func (a *guard) Once(ctx context.Context, out *host.Outcome, effect func(context.Context) ([]byte, error)) ([]byte, bool, error) {
	ran := false
	res, replay, err := a.Guard.Once(ctx, out, func(ctx context.Context) ([]byte, error) {
		ran = true
		return effect(ctx)
	})
	a.executed(out, ran, replay, err)
	return res, replay, err
}

// OnceTx records as Once does. The effect ran when run committed it
// (Acquired) or when run failed with an error of the effect's own (one
// that does not wrap ledger.ErrUnavailable: see host.Guard.OnceTx).
func (a *guard) OnceTx(ctx context.Context, out *host.Outcome, run func(context.Context, ledger.Op) (ledger.Claim, error)) ([]byte, bool, error) {
	ran := false
	res, replay, err := a.Guard.OnceTx(ctx, out, func(ctx context.Context, op ledger.Op) (ledger.Claim, error) {
		c, err := run(ctx, op)
		if (err == nil && c.Status == ledger.Acquired) || (err != nil && !errors.Is(err, ledger.ErrUnavailable)) {
			ran = true
		}
		return c, err
	})
	a.executed(out, ran, replay, err)
	return res, replay, err
}

// executed records the end of a Once or OnceTx.
func (a *guard) executed(out *host.Outcome, ran, replay bool, err error) {
	r := Record{Kind: "executed", OperationID: out.OperationID, AnswersDigest: out.AnswersDigest}
	switch {
	case err != nil && !ran:
		r.Kind, r.Outcome, r.Rule = "execution.refused", "refused", codeOf(err)
	case err != nil:
		r.Outcome, r.Rule = "failed", codeOf(err)
	case replay:
		r.Kind = "replayed"
	}
	a.put(r)
}

func codeOf(err error) string {
	if e, ok := host.AsError(err); ok {
		if e.Reason != "" {
			return e.Code + "/" + e.Reason
		}
		return e.Code
	}
	return "error"
}

// digestOf is the SHA-256 of a value's bytes as the client sent them, so
// that the audit log can match a call without holding its arguments.
func digestOf(b json.RawMessage) string {
	if len(b) == 0 {
		return ""
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// FieldsOf lists what res asks: each form field by name and kind
// (type/format), a URL-mode request as kind "url" (never the URL: a link
// can be a capability), sampling and roots by their kind.
func FieldsOf(res *host.InputRequiredResult) []Field {
	if res == nil {
		return nil
	}
	var out []Field
	keys := make([]string, 0, len(res.InputRequests))
	for k := range res.InputRequests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var r struct {
			Method string `json:"method"`
			Params struct {
				Mode   string `json:"mode"`
				Schema struct {
					Properties map[string]struct {
						Type   any    `json:"type"`
						Format string `json:"format"`
					} `json:"properties"`
				} `json:"requestedSchema"`
			} `json:"params"`
		}
		if json.Unmarshal(res.InputRequests[k], &r) != nil {
			out = append(out, Field{Name: k, Kind: "unreadable"})
			continue
		}
		switch {
		case r.Method == "elicitation/create" && r.Params.Mode == "url":
			out = append(out, Field{Name: k, Kind: "url"})
		case r.Method == "elicitation/create":
			names := make([]string, 0, len(r.Params.Schema.Properties))
			for n := range r.Params.Schema.Properties {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				p := r.Params.Schema.Properties[n]
				kind, _ := p.Type.(string)
				if p.Format != "" {
					kind += "/" + p.Format
				}
				out = append(out, Field{Name: k + "." + n, Kind: kind})
			}
		case r.Method == "sampling/createMessage":
			out = append(out, Field{Name: k, Kind: "sampling"})
		case r.Method == "roots/list":
			out = append(out, Field{Name: k, Kind: "roots"})
		default:
			out = append(out, Field{Name: k, Kind: "other"})
		}
	}
	return out
}

// FieldsOfJSON is FieldsOf for an InputRequiredResult as JSON.
func FieldsOfJSON(raw []byte) []Field {
	var res host.InputRequiredResult
	if json.Unmarshal(raw, &res) != nil {
		return nil
	}
	return FieldsOf(&res)
}

// Outcome names a retry's status as the audit log does.
func Outcome(s host.Status) string {
	switch s {
	case host.Complete:
		return "accept"
	case host.Declined:
		return "decline"
	case host.Cancelled:
		return "cancel"
	case host.InputRequired:
		return "invalid"
	}
	return string(s)
}

// Refusal is the record of a guard error: its code, and "expired" for a
// state that ran out.
func Refusal(r Record, err error) Record {
	r.Outcome, r.Rule = "refused", codeOf(err)
	if e, ok := host.AsError(err); ok && e.Reason == "expired" {
		r.Kind, r.Outcome = "expired", ""
	}
	return r
}

// DigestOf is the SHA-256 of a value's bytes as the client sent them.
func DigestOf(b []byte) string { return digestOf(b) }
