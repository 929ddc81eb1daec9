package proxy

// A legacy upstream (a server that answered initialize, not
// server/discover) asks for input with a server-to-client request in the
// middle of a call. For a 2026-07-28 client the proxy turns that request
// into an input_required round: the upstream's call stays open here, the
// request is checked and sealed as any upstream round is (its upstream
// state names the pending request: "pending:<key>", random and known only
// to this instance), and the retry's answer, once the guard has validated
// it, is the upstream request's response. A state that reaches another
// instance, comes after a restart, or outlives its pending request gets a
// clear "call again" error. Every other ending of a round answers the
// upstream's request at once, so that the principal's child or session is
// free for its next call: "cancel" when nobody retries in time, when the
// retry can no longer succeed (the round limit, a state refused) and at
// shutdown; "decline" when the proxy refuses the form.
//
// Each such call holds an upstream connection or a child for as long as
// its round waits: they are capped overall (--max-pending) and per
// principal (--max-pending-principal), and a call past either is refused
// before it reaches the upstream.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/rawjson"
	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

// defaultPendingTTL bounds how long an upstream request waits for its
// round's retry (the state lives no longer by default).
const defaultPendingTTL = 5 * time.Minute

// Defaults of the caps on calls of a 2025-era upstream held open. Each
// costs an upstream connection (or a stdio child's slot), about three
// goroutines and a stream buffer (~100 KiB with its connection) for up to
// PendingTTL: 1024 of them stay far below the process's file limit and
// ~100 MiB; 16 per principal, as for subscriptions/listen streams, is more
// than one person answers at once.
const (
	defaultMaxPending          = 1024
	defaultMaxPendingPrincipal = 16
)

// endWait bounds how long the end of a round waits for the upstream to
// finish the call it answered (then the call is cancelled).
const endWait = 2 * time.Second

const pendingPrefix = "pending:"

// upEvent is what a legacy upstream call produces: messages before its
// response, then the response (final) or the failure.
type upEvent struct {
	raw   []byte
	final bool
	err   error
}

// legacyCall is one upstream call in flight for a legacy upstream.
type legacyCall struct {
	events chan upEvent
	cancel context.CancelFunc
	h      http.Header
	// principal the call is made for (its child, for a per-principal upstream)
	principal string
	// waiting is set while a round of the call waits for its retry: no
	// client request is open to hear its notifications, so they are
	// dropped instead of filling events (which would stall the upstream's
	// stream, or fail a stdio call past its queue).
	waiting atomic.Bool
	done    chan struct{} // closed when the upstream call has returned
	// the upstream's open request, while a round waits for its retry
	mu     sync.Mutex
	reqID  json.RawMessage
	method string
	timer  *time.Timer
	key    string     // the round's pending key (stale once taken)
	states [][32]byte // the sealed requestStates of its rounds
	ended  bool       // the upstream call returned
}

type pendingRounds struct {
	m sync.Map // key -> *legacyCall
	// states maps the digest of each sealed requestState of a waiting
	// round to its key: a retry the guard refuses for good (the round
	// limit) names its round only by that state.
	states sync.Map
	// calls are the upstream calls held open, overall and per principal.
	calls mcphttp.Streams
}

// errPendingFull refuses a call of a 2025-era upstream past the caps on
// calls held open.
func errPendingFull() *jsonrpc.Error {
	return busyError("too many calls to the upstream are open, waiting for answers to its questions (overall, or this principal's): answer or drop one, or try again later", 5)
}

// busyCode is the data.code of the proxy's refusals for want of room.
const busyCode = "mrtr.proxy.busy"

// busyError is a retryable refusal for want of room: JSON-RPC -32000,
// over HTTP 503 with Retry-After.
func busyError(msg string, retryAfter int) *jsonrpc.Error {
	data, _ := json.Marshal(struct {
		Code       string `json:"code"`
		Retryable  bool   `json:"retryable"`
		RetryAfter int    `json:"retryAfter"`
	}{busyCode, true, retryAfter})
	return &jsonrpc.Error{Code: mcphttp.CodeServerBusy, Message: msg, Data: data}
}

// startLegacyCall sends msg upstream on a context of its own (the call
// outlives the client's request while a round waits) and streams what
// comes back. ok is false, and nothing is sent, when the call would pass
// the caps on calls held open.
func (p *Proxy) startLegacyCall(principal string, msg []byte, h http.Header) (*legacyCall, bool) {
	release, ok := p.pending.calls.Acquire(principal)
	if !ok {
		p.up.busy.WithLabelValues("pending").Inc()
		return nil, false
	}
	ctx, cancel := context.WithTimeout(upstream.WithRounds(upstream.WithPrincipal(context.Background(), principal)), p.cfg.PendingTTL+time.Minute)
	lc := &legacyCall{events: make(chan upEvent, 16), cancel: cancel, h: h, principal: principal, done: make(chan struct{})}
	go func() {
		defer cancel()
		resp, err := p.cfg.Upstream.Call(ctx, msg, h, func(raw []byte) error {
			if lc.waiting.Load() && isNotification(raw) {
				p.up.refused.WithLabelValues("unheard").Inc()
				return nil
			}
			lc.events <- upEvent{raw: bytes.Clone(raw)}
			return nil
		})
		release()
		close(lc.done)
		if p.forgetCall(lc) {
			// Its round still waited (the upstream failed or gave up):
			// nobody reads the call now, and a retry is told to start
			// again.
			p.up.rounds.WithLabelValues("upstream_ended").Inc()
			return
		}
		lc.events <- upEvent{raw: resp, final: true, err: err}
	}()
	return lc, true
}

// forgetCall clears what a call's rounds left behind once the upstream
// call returned; it reports whether a round still waited.
func (p *Proxy) forgetCall(lc *legacyCall) bool {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.ended = true
	for _, d := range lc.states {
		p.pending.states.Delete(d)
	}
	lc.states = nil
	if lc.key == "" || !p.pending.m.CompareAndDelete(lc.key, lc) {
		return false
	}
	if lc.timer != nil {
		lc.timer.Stop()
	}
	return true
}

// noteState records a sealed requestState of lc's round key.
func (p *Proxy) noteState(lc *legacyCall, key, state string) {
	if state == "" {
		return
	}
	d := sha256.Sum256([]byte(state))
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.ended {
		return
	}
	p.pending.states.Store(d, key)
	lc.states = append(lc.states, d)
}

// roundOf is the waiting round a sealed requestState belongs to, if it
// is principal's.
func (p *Proxy) roundOf(state, principal string) (string, *legacyCall, bool) {
	if state == "" {
		return "", nil, false
	}
	k, ok := p.pending.states.Load(sha256.Sum256([]byte(state)))
	if !ok {
		return "", nil, false
	}
	v, ok := p.pending.m.Load(k.(string))
	if !ok || v.(*legacyCall).principal != principal {
		return "", nil, false
	}
	return k.(string), v.(*legacyCall), true
}

// stateOfResult is the requestState of an InputRequiredResult.
func stateOfResult(result json.RawMessage) string {
	var r struct {
		RequestState string `json:"requestState"`
	}
	_ = json.Unmarshal(result, &r)
	return r.RequestState
}

// stateOfResponse is the requestState of a response's result.
func stateOfResponse(resp []byte) string {
	var r struct {
		Result json.RawMessage `json:"result"`
	}
	_ = json.Unmarshal(resp, &r)
	return stateOfResult(r.Result)
}

// legacyAnswer is runLegacy's answer to the client, a refusal included.
func (p *Proxy) legacyAnswer(ctx context.Context, m *mcphttp.Message, body []byte, principal string, msg []byte, h http.Header, s Sink) []byte {
	resp, jerr := p.runLegacy(ctx, m, body, principal, msg, h, nil, s)
	if jerr != nil {
		return mcphttp.ErrorResponse(m.ID, jerr)
	}
	return resp
}

// runLegacy sends msg to a 2025-era upstream for the client request m and
// returns its answer or its first round (after continues an earlier
// round); a call past the caps on open calls is refused unsent.
func (p *Proxy) runLegacy(ctx context.Context, m *mcphttp.Message, body []byte, principal string, msg []byte, h http.Header, after *host.UpstreamOutcome, s Sink) ([]byte, *jsonrpc.Error) {
	lc, ok := p.startLegacyCall(principal, msg, h)
	if !ok {
		return nil, errPendingFull()
	}
	return p.awaitLegacy(ctx, m, body, principal, lc, after, s), nil
}

// roundOver reports whether the guard's refusal of a retry is for good:
// no retry of that round can succeed any more.
func roundOver(code string) bool {
	return code == host.CodeRoundsExceeded || code == host.CodeStateInvalid || code == host.CodePolicyDenied
}

// isResult reports whether resp is a response with a result.
func isResult(resp []byte) bool {
	ms, err := rawjson.Object(resp)
	if err != nil {
		return false
	}
	_, ok := rawjson.Find(ms, "result")
	return ok
}

// inputKind maps a server-to-client request to an input request key.
func inputKind(method string) (string, bool) {
	switch method {
	case "elicitation/create":
		return "elicitation", true
	case "sampling/createMessage":
		return "sampling", true
	case "roots/list":
		return "roots", true
	}
	return "", false
}

// awaitLegacy waits for the call's next event on behalf of the client
// request m: the response ends it; a server-to-client request becomes a
// sealed round (after continues an earlier round). It returns the
// client's answer.
func (p *Proxy) awaitLegacy(ctx context.Context, m *mcphttp.Message, body []byte, principal string, lc *legacyCall, after *host.UpstreamOutcome, s Sink) []byte {
	for {
		var ev upEvent
		select {
		case ev = <-lc.events:
		case <-ctx.Done():
			// Nobody reads the call's events any more: cancel it, and
			// take what it still sends so that it never blocks (a stdio
			// child's slot is released only when the call returns).
			lc.cancel()
			go drain(lc)
			return mcphttp.ErrorResponse(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the request ended before the upstream answered"})
		}
		if ev.final {
			if ev.err != nil {
				return p.upstreamError(m, ev.err)
			}
			resp := withID(ev.raw, m.ID)
			if !isInputRequired(resp) {
				return resp
			}
			// A server of both eras may also ask the 2026-07-28 way: its
			// round is linted, policed and sealed as any upstream's.
			if claimsPendingState(resp) {
				p.up.refused.WithLabelValues("invalid_result").Inc()
				p.log.Warn("refused an upstream round whose requestState takes the proxy's reserved prefix", "target", m.Target(), "prefix", pendingPrefix)
				return mcphttp.ErrorResponse(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
					Message: "the upstream's requestState begins with " + strconv.Quote(pendingPrefix) + ", which mrtr-wasm proxy reserves for its own rounds"})
			}
			return p.ask(ctx, m, body, principal, resp, after)
		}
		var r struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(ev.raw, &r) != nil || r.Method == "" {
			continue
		}
		if len(r.ID) == 0 || string(r.ID) == "null" { // a notification: the client's while it waits
			if s != nil {
				_ = s.Notify(ev.raw)
			}
			continue
		}
		if r.Method == "ping" {
			// Liveness, not a question: the proxy answers it.
			if err := p.cfg.Upstream.Send(upstream.WithPrincipal(ctx, lc.principal), []byte(`{"jsonrpc":"2.0","id":`+string(r.ID)+`,"result":{}}`), lc.h); err != nil {
				p.log.Warn("legacy upstream: the answer to its ping could not be sent", "error", errText(err))
			}
			continue
		}
		kind, ok := inputKind(r.Method)
		if !ok {
			p.refuseServerRequest(ctx, ev.raw, lc.h)
			continue
		}
		if kind == "roots" && !declares(m, "roots") {
			// Roots are context a server may ask for at any time (many
			// ask right after initialize, which can land in a call), not
			// a question the call cannot go on without: a client that
			// declared none has none, the upstream hears so, and the call
			// goes on.
			p.up.refused.WithLabelValues("capability").Inc()
			reply := mcphttp.ErrorResponse(r.ID, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "the client of this call declared no roots"})
			if err := p.cfg.Upstream.Send(upstream.WithPrincipal(ctx, lc.principal), reply, lc.h); err != nil {
				p.log.Warn("legacy upstream: the answer to its request could not be sent", "method", r.Method, "error", errText(err))
			}
			continue
		}
		key := newPendingKey()
		params := toModernParams(r.Method, r.Params)
		mb, _ := json.Marshal(r.Method)
		sb, _ := json.Marshal(pendingPrefix + key)
		resp := []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"resultType":"input_required","inputRequests":{"` + kind +
			`":{"method":` + string(mb) + `,"params":` + string(params) + `}},"requestState":` + string(sb) + `}}`)
		lc.mu.Lock()
		lc.reqID, lc.method, lc.key = bytes.Clone(r.ID), r.Method, key
		lc.timer = time.AfterFunc(p.cfg.PendingTTL, func() { p.expirePending(key) })
		lc.mu.Unlock()
		lc.waiting.Store(true)
		p.pending.m.Store(key, lc)
		out := p.ask(ctx, m, body, principal, resp, after)
		if !isInputRequired(out) {
			// Refused: the upstream hears decline for a form the proxy
			// refused (a tool's error result), cancel for anything else
			// (the round limit, a kind the client lacks); the client gets
			// why.
			action := `{"action":"cancel"}`
			if isResult(out) {
				action = `{"action":"decline"}`
			}
			p.endRound(key, action, "refused", false)
			return out
		}
		p.noteState(lc, key, stateOfResponse(out))
		return out
	}
}

// declares reports whether the client capabilities in m's _meta hold kind.
func declares(m *mcphttp.Message, kind string) bool {
	var caps map[string]json.RawMessage
	if json.Unmarshal(m.Meta()[mcphttp.MetaClientCapabilities], &caps) != nil {
		return false
	}
	_, ok := caps[kind]
	return ok
}

// toModernParams turns a 2025-11-25 request's params into their
// 2026-07-28 form: a URL elicitation's elicitationId is gone (the round's
// requestState correlates it).
func toModernParams(method string, params json.RawMessage) json.RawMessage {
	if len(params) == 0 || string(params) == "null" {
		return json.RawMessage("{}")
	}
	if method != "elicitation/create" || !bytes.Contains(params, []byte(`"elicitationId"`)) {
		return params
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil {
		return params
	}
	delete(m, "elicitationId")
	b, err := json.Marshal(m)
	if err != nil {
		return params
	}
	return b
}

func newPendingKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// answer sends the response to the upstream's open request and clears it.
func (lc *legacyCall) answer(ctx context.Context, p *Proxy, result string, decline bool) {
	lc.mu.Lock()
	id, method := lc.reqID, lc.method
	lc.reqID = nil
	if lc.timer != nil {
		lc.timer.Stop()
	}
	lc.mu.Unlock()
	if id == nil {
		return
	}
	var msg string
	if decline && method != "elicitation/create" {
		msg = `{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-1,"message":"the request was not answered"}}`
	} else {
		msg = `{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`
	}
	if err := p.cfg.Upstream.Send(upstream.WithPrincipal(ctx, lc.principal), []byte(msg), lc.h); err != nil {
		p.log.Warn("legacy upstream: the answer to its request could not be sent", "method", method, "error", errText(err))
	}
}

// expirePending answers a round nobody retried with cancel and frees it.
func (p *Proxy) expirePending(key string) { p.endRound(key, `{"action":"cancel"}`, "expired", false) }

// endRound answers a waiting round's upstream request with result (a
// request other than elicitation gets an error) and frees it, counted as
// outcome. With wait it returns once the upstream finished the call (or,
// after endWait, once the call is cancelled): the principal's next call
// then finds its child or upstream session free.
func (p *Proxy) endRound(key, result, outcome string, wait bool) bool {
	v, ok := p.pending.m.LoadAndDelete(key)
	if !ok {
		return false
	}
	lc := v.(*legacyCall)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lc.answer(ctx, p, result, true)
	p.up.rounds.WithLabelValues(outcome).Inc()
	go drain(lc)
	if wait {
		t := time.NewTimer(endWait)
		defer t.Stop()
		select {
		case <-lc.done:
		case <-t.C:
			lc.cancel()
			<-lc.done
		}
	}
	return true
}

// endRoundOf ends the waiting round whose sealed state a retry carried,
// when the guard refused that retry for good: nothing can answer the
// upstream's request any more.
func (p *Proxy) endRoundOf(m *mcphttp.Message, principal string) {
	if key, _, ok := p.roundOf(m.RequestState(), principal); ok {
		p.endRound(key, `{"action":"cancel"}`, "abandoned", true)
	}
}

// Close answers every waiting round cancel (shutdown), so that a 2025-era
// upstream hears the end of each rather than a dropped connection.
func (p *Proxy) Close() {
	var wg sync.WaitGroup
	p.pending.m.Range(func(k, _ any) bool {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.endRound(k.(string), `{"action":"cancel"}`, "shutdown", true)
		}()
		return true
	})
	wg.Wait()
}

// isNotification reports whether raw is a JSON-RPC message without an id.
func isNotification(raw []byte) bool {
	ms, err := rawjson.Object(raw)
	if err != nil {
		return false
	}
	_, id := rawjson.Find(ms, "id")
	return !id
}

// drain reads what is left of a call nobody waits for.
func drain(lc *legacyCall) {
	for ev := range lc.events {
		if ev.final {
			return
		}
	}
}

// pendingKeyOf returns the key when a restored upstream state names a
// pending request.
func pendingKeyOf(forward []byte) (string, bool) {
	var f struct {
		Params struct {
			RequestState string `json:"requestState"`
		} `json:"params"`
	}
	if json.Unmarshal(forward, &f) != nil {
		return "", false
	}
	return strings.CutPrefix(f.Params.RequestState, pendingPrefix)
}

// claimsPendingState reports whether an upstream's result holds a
// requestState (any member of that name, in any case, at any depth: what
// the guard may restore) that begins with pendingPrefix. Restored on the
// retry, such a state would be taken for a pending request of this proxy
// (pendingKeyOf): the upstream may not use the prefix.
func claimsPendingState(resp []byte) bool {
	d := json.NewDecoder(bytes.NewReader(resp))
	var objects []bool // per open container: whether it is an object
	name := false      // the next token is a member name
	state := false     // the last token was the name requestState
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		after := state
		state = false
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				objects = append(objects, v == '{')
				name = v == '{'
				continue
			}
			objects = objects[:len(objects)-1]
		case string:
			if name {
				state, name = strings.EqualFold(v, "requestState"), false
				continue
			}
			if after && strings.HasPrefix(v, pendingPrefix) {
				return true
			}
		}
		name = len(objects) > 0 && objects[len(objects)-1]
	}
}

// errStartAgain: the pending request is gone.
var errStartAgain = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
	Message: "this round's upstream request is no longer open (it expired, the upstream ended the call or its child was given to another user, or the retry reached another proxy instance or came after a restart): call the tool again without requestState"}

// continueLegacy delivers a validated retry's answer to the upstream's
// open request and waits for what the upstream does next.
func (p *Proxy) continueLegacy(ctx context.Context, m *mcphttp.Message, body []byte, principal string, key string, out *host.UpstreamOutcome, s Sink) ([]byte, error) {
	v, ok := p.pending.m.Load(key)
	if !ok || v.(*legacyCall).principal != principal || !p.pending.m.CompareAndDelete(key, v) {
		// Gone, or (the guard binds states to their principal, so never
		// from a sealed state) another principal's.
		return nil, errStartAgain
	}
	lc := v.(*legacyCall)
	lc.waiting.Store(false) // the retry's request hears what comes next
	var f struct {
		Params struct {
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
		} `json:"params"`
	}
	if err := json.Unmarshal(out.Forward, &f); err != nil {
		return nil, err
	}
	lc.mu.Lock()
	kind, _ := inputKind(lc.method)
	lc.mu.Unlock()
	ans, ok := f.Params.InputResponses[kind]
	if !ok {
		lc.waiting.Store(true)
		p.pending.m.Store(key, lc)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "inputResponses lacks " + kind}
	}
	lc.mu.Lock()
	for _, d := range lc.states { // its states are spent
		p.pending.states.Delete(d)
	}
	lc.states = nil
	lc.mu.Unlock()
	lc.answer(ctx, p, string(ans), false)
	return p.awaitLegacy(ctx, m, body, principal, lc, out, s), nil
}
