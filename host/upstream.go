package host

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/guest/core"
	"github.com/mrtr-wasm/mrtr-wasm/internal/rawjson"
)

// UpstreamCall is one client request as a proxy in front of an MCP server
// it did not write (`mrtr-wasm proxy`) received it. The guard reads the
// method, target, arguments, capabilities, requestState and inputResponses
// from Request itself (guest/ABI.md, upstream.ask and upstream.resume).
type UpstreamCall struct {
	// Principal is the authenticated caller.
	Principal string
	// Upstream names the upstream (its URL or command line); a state
	// opens only at a proxy for the same upstream.
	Upstream string
	// Request is the client's JSON-RPC request, exactly as received.
	Request json.RawMessage
	// Method and Target are what Request says (the tool or prompt name,
	// or the resource URI), for the policy.
	Method, Target string
	// Scopes and Claims are what the caller's access token grants and
	// shows the policy (see Request).
	Scopes []string
	Claims json.RawMessage
}

// UpstreamRound is a sealed round of a proxy: the InputRequiredResult to
// send the client in place of the upstream's.
type UpstreamRound struct {
	OperationID string
	Round       int
	Result      json.RawMessage
}

// UpstreamOutcome is the guard's verdict on a retry at a proxy.
type UpstreamOutcome struct {
	Status      Status
	OperationID string
	Round       int
	// UpstreamRound (Complete, Declined, Cancelled) is the round at which
	// the upstream asked what this retry answers: the proxy's own re-asks
	// keep it, so OnceForward claims one upstream round once, whichever
	// of its states comes back.
	UpstreamRound int
	// ForwardDigest (Complete, Declined, Cancelled) is the core's digest
	// of the answers Forward carries, declines and cancels included.
	ForwardDigest string
	// Answers (Complete) are the answers Forward carries: reduced to what
	// the guard checked, each value as the client wrote it. Declined and
	// Cancelled name keys.
	Answers map[string]json.RawMessage
	// AnswersDigest is the core's digest of Answers (Complete only).
	AnswersDigest string
	Declined      []string
	Cancelled     []string
	// InputRequired (Status InputRequired) is the result that asks again.
	InputRequired json.RawMessage
	// Forward (Complete, Declined, Cancelled) is the message to send the
	// upstream: the client's request with the upstream's requestState put
	// back and only the checked answers, reduced as Answers are.
	Forward json.RawMessage
	// Dropped is what the guard left out of the client's answers (any
	// status): names only, for a metric and a log line.
	Dropped DroppedAnswers
	// remember is the core's rememberSeconds: how long OnceForward keeps
	// the upstream's result (before the ledger's margin).
	remember time.Duration
}

// DroppedAnswers is what upstream.resume left out of a retry's answers
// (guest/ABI.md, "dropped"): form fields not asked, members beside those
// checked, responses to keys not pending. The counts are exact; Names
// (KEY.content.FIELD, KEY.MEMBER, KEY) lists at most 16, each cut to 64
// bytes, and never holds a value.
type DroppedAnswers struct {
	Fields    int      `json:"fields"`
	Members   int      `json:"members"`
	Responses int      `json:"responses"`
	Names     []string `json:"names"`
}

// Any reports whether anything was dropped.
func (d DroppedAnswers) Any() bool { return d.Fields+d.Members+d.Responses > 0 }

type upstreamResponse struct {
	OK          bool                       `json:"ok"`
	Error       *wireError                 `json:"error"`
	Status      Status                     `json:"status"`
	OperationID string                     `json:"operationId"`
	Round       int                        `json:"round"`
	UpRound     int                        `json:"upstreamRound"`
	FwdDigest   string                     `json:"forwardDigest"`
	Result      json.RawMessage            `json:"result"`
	Answers     map[string]json.RawMessage `json:"answers"`
	Digest      string                     `json:"answersDigest"`
	Declined    []string                   `json:"declined"`
	Cancelled   []string                   `json:"cancelled"`
	Forward     json.RawMessage            `json:"forward"`
	Inputs      json.RawMessage            `json:"inputRequests"` // upstream.inputs
	Interrupted bool                       `json:"interrupted"`
	Remember    int64                      `json:"rememberSeconds"`
	Dropped     DroppedAnswers             `json:"dropped"`
}

// rawDecoder is a guest response that reads the guest's output itself,
// without encoding/json: the output is the guard's own JSON.
type rawDecoder interface {
	decodeRaw(out []byte) error
}

// decodeRaw reads the members of an upstream.ask or upstream.resume
// output; the raw values (result, forward, answers) are slices of out.
func (r *upstreamResponse) decodeRaw(out []byte) error {
	ms, err := rawjson.Object(out)
	if err != nil {
		return err
	}
	for _, m := range ms {
		v := out[m.Start:m.End]
		switch string(m.Key) {
		case "ok":
			r.OK = string(v) == "true"
		case "interrupted":
			r.Interrupted = string(v) == "true"
		case "error":
			err = json.Unmarshal(v, &r.Error)
		case "status":
			var s string
			s, err = rawString(v)
			r.Status = Status(s)
		case "operationId":
			r.OperationID, err = rawString(v)
		case "answersDigest":
			r.Digest, err = rawString(v)
		case "round":
			r.Round, err = strconv.Atoi(string(v))
		case "upstreamRound":
			r.UpRound, err = strconv.Atoi(string(v))
		case "forwardDigest":
			r.FwdDigest, err = rawString(v)
		case "rememberSeconds":
			r.Remember, err = strconv.ParseInt(string(v), 10, 64)
		case "result":
			r.Result = v
		case "forward":
			r.Forward = v
		case "inputRequests":
			r.Inputs = v
		case "answers":
			var as []rawjson.Member
			if as, err = rawjson.Object(v); err == nil {
				r.Answers = make(map[string]json.RawMessage, len(as))
				for _, a := range as {
					r.Answers[string(a.Key)] = v[a.Start:a.End]
				}
			}
		case "declined":
			err = json.Unmarshal(v, &r.Declined)
		case "cancelled":
			err = json.Unmarshal(v, &r.Cancelled)
		case "dropped":
			err = json.Unmarshal(v, &r.Dropped)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func rawString(v []byte) (string, error) {
	s, ok := rawjson.String(v)
	if !ok {
		return "", errNotString
	}
	return s, nil
}

var errNotString = errors.New("not a JSON string")

func (r *upstreamResponse) ok() bool          { return r.OK }
func (r *upstreamResponse) interrupted() bool { return r.Interrupted }

func (r *upstreamResponse) err() error {
	w := response{Error: r.Error}
	return w.err()
}

func (g *Guard) upstreamEnvelope(op string, c *UpstreamCall) ([]byte, error) {
	env, err := g.envelopeHead(256+len(c.Request)+len(c.Upstream), op, c.Principal)
	if err != nil {
		return nil, err
	}
	env = append(env, `,"upstream":`...)
	env = core.AppendJSONString(env, c.Upstream)
	return appendRaw(env, "request", c.Request)
}

// UpstreamAsk seals an upstream's InputRequiredResult (response is the
// upstream's JSON-RPC response, as received) after the policy allowed
// what it asks. after continues the logical request of a round the
// upstream asked again after (nil for the first).
func (g *Guard) UpstreamAsk(ctx context.Context, c *UpstreamCall, response json.RawMessage, after *UpstreamOutcome) (*UpstreamRound, error) {
	if g.cfg.policy == nil {
		return g.upstreamAsk(ctx, c, response, after, askOptions{})
	}
	req := &Request{Principal: c.Principal, Method: c.Method, Target: c.Target, Scopes: c.Scopes, Claims: c.Claims}
	// One guest call where one will do: the round is sealed with the
	// decision the policy gave for this tool last time (none at first)
	// and the policy decides on the requests the core wrote into it, byte
	// for byte what the client would see. The round goes out only if the
	// policy gave exactly that decision again; any other is applied by
	// sealing again, where the core allows or refuses it. A refusal by the
	// core falls back to inputs, policy, ask, so that the policy still
	// speaks first.
	key := c.Upstream + "\x00" + c.Method + "\x00" + c.Target
	guess := g.upDecisions.get(key)
	if r, err := g.upstreamAsk(ctx, c, response, after, askOptions{policy: guess}); err == nil {
		inputs, err := requestsOfResult(r.Result)
		if err != nil {
			return nil, err
		}
		var o askOptions
		if err := g.policyAsk(ctx, req, inputs, &o); err != nil {
			return nil, err
		}
		g.upDecisions.put(key, o.policy)
		if guess != nil && bytes.Equal(o.policy, guess) {
			return r, nil
		}
		return g.upstreamAsk(ctx, c, response, after, o)
	}
	inputs, err := g.upstreamInputs(ctx, response)
	if err != nil {
		return nil, err
	}
	var o askOptions
	if err := g.policyAsk(ctx, req, inputs, &o); err != nil {
		return nil, err
	}
	g.upDecisions.put(key, o.policy)
	return g.upstreamAsk(ctx, c, response, after, o)
}

// decisionMemo holds the decision the policy last gave per upstream tool
// (as the envelope carries it), which the next ask of that tool is sealed
// with first. A guess that turns out wrong costs a second guest call,
// never a wrong state.
type decisionMemo struct {
	mu sync.Mutex
	m  map[string][]byte
}

const maxDecisionMemo = 4096

func (l *decisionMemo) get(key string) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[key]
}

func (l *decisionMemo) put(key string, d []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || len(l.m) >= maxDecisionMemo {
		l.m = make(map[string][]byte)
	}
	l.m[key] = d
}

// upstreamAsk is op upstream.ask with the policy's decision o (none: the
// guard's own limits).
func (g *Guard) upstreamAsk(ctx context.Context, c *UpstreamCall, response json.RawMessage, after *UpstreamOutcome, o askOptions) (*UpstreamRound, error) {
	env, err := g.upstreamEnvelope("upstream.ask", c)
	if err != nil {
		return nil, err
	}
	if env, err = appendRaw(env, "response", response); err != nil {
		return nil, &Error{Code: core.CodeUpstreamResult, Message: "the upstream's response is not JSON"}
	}
	env = o.appendPolicy(env)
	if after != nil {
		env = append(env, `,"after":{"operationId":`...)
		env = core.AppendJSONString(env, after.OperationID)
		env = append(env, `,"round":`...)
		env = strconv.AppendInt(env, int64(after.Round), 10)
		env = append(env, '}')
	}
	env = append(env, '}')
	var r upstreamResponse
	if err := g.call(ctx, env, &r); err != nil {
		return nil, err
	}
	return &UpstreamRound{OperationID: r.OperationID, Round: r.Round, Result: r.Result}, nil
}

// UpstreamResume checks a retry at a proxy: the state opens only for the
// same principal, method, target, arguments, audience and upstream; the
// answers are checked against what was asked. A missing or invalid answer
// comes back as InputRequired (the proxy asks again itself); anything
// else carries the message to forward.
func (g *Guard) UpstreamResume(ctx context.Context, c *UpstreamCall) (*UpstreamOutcome, error) {
	env, err := g.upstreamEnvelope("upstream.resume", c)
	if err != nil {
		return nil, err
	}
	lim, err := g.policyResume(ctx, &Request{Principal: c.Principal, Method: c.Method, Target: c.Target, Scopes: c.Scopes, Claims: c.Claims})
	if err != nil {
		return nil, err
	}
	env = lim.appendPolicy(env)
	env = append(env, '}')
	var r upstreamResponse
	if err := g.call(ctx, env, &r); err != nil {
		return nil, err
	}
	o := &UpstreamOutcome{Status: r.Status, OperationID: r.OperationID, Round: r.Round, UpstreamRound: r.UpRound, ForwardDigest: r.FwdDigest, Answers: r.Answers,
		AnswersDigest: r.Digest, Declined: r.Declined, Cancelled: r.Cancelled, Forward: r.Forward, Dropped: r.Dropped,
		remember: time.Duration(r.Remember) * time.Second}
	if r.Status == InputRequired {
		o.InputRequired = r.Result
	}
	return o, nil
}

// OnceForward sends a retry's forward to the upstream at most once: the
// round is claimed in the ledger by its operation id and upstream round, so
// concurrent and later replays get the stored result of the first. See
// Once for the errors.
func (g *Guard) OnceForward(ctx context.Context, o *UpstreamOutcome, effect func(ctx context.Context) ([]byte, error)) ([]byte, bool, error) {
	if o == nil || o.Forward == nil || o.OperationID == "" {
		return nil, false, errOnceNotComplete()
	}
	digest := o.AnswersDigest
	switch o.Status {
	case Declined, Cancelled:
		// Keyed by all the round forwards (what was declined or
		// cancelled, and the answers beside it): other answers conflict.
		if o.ForwardDigest == "" {
			return nil, false, errOnceNotComplete()
		}
		h := sha256.Sum256([]byte("mrtr-wasm/proxy/" + string(o.Status) + "\x00" + o.ForwardDigest))
		digest = hex.EncodeToString(h[:])
	}
	op := &Outcome{Status: Complete, OperationID: o.OperationID + "/" + strconv.Itoa(cmp.Or(o.UpstreamRound, o.Round)), Answers: o.Answers, AnswersDigest: digest, remember: o.remember}
	return g.Once(ctx, op, effect)
}

// upstreamInputs returns the upstream's input requests for the policy,
// sorted by key, as the guard core reads them (op upstream.inputs): the
// requests upstream.ask will lint and seal, byte for byte as the client
// will see them. The host never reads the upstream's bytes itself: a
// second reader (encoding/json matches member names in any case) would
// let an upstream show the policy one request and the client another.
func (g *Guard) upstreamInputs(ctx context.Context, response json.RawMessage) ([]InputRequest, error) {
	env, err := appendRaw([]byte(`{"v":1,"op":"upstream.inputs"`), "response", response)
	if err != nil {
		return nil, &Error{Code: core.CodeUpstreamResult, Message: "the upstream's response is not JSON"}
	}
	env = append(env, '}')
	var r upstreamResponse
	if err := g.call(ctx, env, &r); err != nil {
		return nil, err
	}
	return inputRequestsOf(r.Inputs)
}

// requestsOfResult reads the input requests of an InputRequiredResult
// the guard module wrote (none when it has no inputRequests).
func requestsOfResult(result json.RawMessage) ([]InputRequest, error) {
	ms, err := rawjson.Object(result)
	if err != nil {
		return nil, errUnreadable()
	}
	for _, m := range ms {
		if string(m.Key) == "inputRequests" {
			return inputRequestsOf(result[m.Start:m.End])
		}
	}
	return []InputRequest{}, nil // as upstream.inputs reads none
}

// inputRequestsOf reads an inputRequests object the guard module wrote:
// its own output, with exactly these members in this case.
func inputRequestsOf(in json.RawMessage) ([]InputRequest, error) {
	ms, err := rawjson.Object(in)
	if err != nil {
		return nil, errUnreadable()
	}
	out := make([]InputRequest, 0, len(ms))
	for _, m := range ms {
		var req struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(in[m.Start:m.End], &req); err != nil {
			return nil, errUnreadable()
		}
		out = append(out, InputRequest{Key: string(m.Key), Method: req.Method, Params: req.Params})
	}
	sortInputs(out)
	return out, nil
}

func errUnreadable() error {
	return &Error{Code: CodeInternal, Message: "the guard module returned an unreadable response"}
}

func sortInputs(in []InputRequest) {
	slices.SortFunc(in, func(a, b InputRequest) int { return strings.Compare(a.Key, b.Key) })
}
