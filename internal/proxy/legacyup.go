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
// clear "call again" error; a round nobody answers is answered "cancel"
// when its state expires.

import (
	"bytes"
	"context"
	"crypto/rand"
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
	// the upstream's open request, while a round waits for its retry
	mu     sync.Mutex
	reqID  json.RawMessage
	method string
	timer  *time.Timer
}

type pendingRounds struct{ m sync.Map } // key -> *legacyCall

// startLegacyCall sends msg upstream on a context of its own (the call
// outlives the client's request while a round waits) and streams what
// comes back.
func (p *Proxy) startLegacyCall(principal string, msg []byte, h http.Header) *legacyCall {
	ctx, cancel := context.WithTimeout(upstream.WithRounds(upstream.WithPrincipal(context.Background(), principal)), p.cfg.PendingTTL+time.Minute)
	lc := &legacyCall{events: make(chan upEvent, 16), cancel: cancel, h: h, principal: principal}
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
		lc.events <- upEvent{raw: resp, final: true, err: err}
	}()
	return lc
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
			return rpcError(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the request ended before the upstream answered"})
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
				return rpcError(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
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
			reply := rpcError(r.ID, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "the client of this call declared no roots"})
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
		lc.reqID, lc.method = bytes.Clone(r.ID), r.Method
		lc.timer = time.AfterFunc(p.cfg.PendingTTL, func() { p.expirePending(key) })
		lc.mu.Unlock()
		lc.waiting.Store(true)
		p.pending.m.Store(key, lc)
		out := p.ask(ctx, m, body, principal, resp, after)
		if !isInputRequired(out) {
			// Refused (a secret-asking form, a kind the client lacks): the
			// upstream hears decline, the client gets why.
			if v, ok := p.pending.m.LoadAndDelete(key); ok {
				v.(*legacyCall).answer(ctx, p, `{"action":"decline"}`, true)
				go drain(v.(*legacyCall))
			}
		}
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
func (p *Proxy) expirePending(key string) {
	v, ok := p.pending.m.LoadAndDelete(key)
	if !ok {
		return
	}
	lc := v.(*legacyCall)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lc.answer(ctx, p, `{"action":"cancel"}`, true)
	p.up.rounds.WithLabelValues("expired").Inc()
	go drain(lc)
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
	Message: "this round's upstream request is no longer open (it expired, or the retry reached another proxy instance or came after a restart): call the tool again without requestState"}

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
	lc.answer(ctx, p, string(ans), false)
	return p.awaitLegacy(ctx, m, body, principal, lc, out, s), nil
}
