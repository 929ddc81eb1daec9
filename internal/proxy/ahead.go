package proxy

import (
	"context"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/rawjson"
)

// answerAhead serves a call that carries inputResponses without a
// requestState: answers given ahead, as a stateless server may take them
// (the conformance suite sends such calls). Forwarded as they are, they
// would reach the upstream unchecked. Instead the call goes upstream
// without them; if the upstream asks, its round is sealed, and the
// answers are checked against it exactly as a retry of that round is:
// missing or invalid ones are asked again by the proxy, and only checked
// answers to what was asked are forwarded, once.
func (p *Proxy) answerAhead(ctx context.Context, m *mcphttp.Message, body []byte, h http.Header, principal string, s Sink) {
	fresh, err := withoutParams(body, "inputResponses", "requestState")
	if err != nil {
		s.Final(mcphttp.ErrorResponse(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params must be an object with the fields of the method"}))
		return
	}
	if p.legacyUpstream() {
		// A 2025-era server takes no inputResponses: a plain call.
		s.Final(p.legacyAnswer(ctx, m, fresh, principal, fresh, h, s))
		return
	}
	resp, err := p.call(ctx, fresh, h, s)
	if err != nil {
		s.Final(p.upstreamError(m, err))
		return
	}
	if !isInputRequired(resp) {
		s.Final(resp) // it did not ask: the answers were not needed
		return
	}
	round, refused := p.sealRound(ctx, m, fresh, principal, resp, nil)
	if refused != nil {
		s.Final(refused)
		return
	}
	state, ok := rawjson.Get(round.Result, "requestState")
	if !ok {
		s.Final(mcphttp.ErrorResponse(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}))
		return
	}
	retry, err := withParams(fresh, []byte(`"inputResponses":`), m.InputResponses(), []byte(`,"requestState":`), state)
	if err != nil {
		s.Final(mcphttp.ErrorResponse(m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}))
		return
	}
	rm, e := mcphttp.ParseMessage(retry)
	if e != nil {
		s.Final(mcphttp.ErrorResponse(m.ID, e))
		return
	}
	p.up.rounds.WithLabelValues("answered_ahead").Inc()
	p.resume(ctx, rm, retry, h, principal, s)
}

// withoutParams returns msg (a JSON-RPC request, its member names already
// checked to be exact and unique) with the named members of its params
// left out. The other members keep the client's bytes, names included:
// the guard binds to, and the upstream gets, what the client wrote.
func withoutParams(msg []byte, drop ...string) ([]byte, error) {
	return rewriteParams(msg, drop, nil)
}

// withParams returns msg with parts appended, in order, inside its params.
func withParams(msg []byte, parts ...[]byte) ([]byte, error) {
	return rewriteParams(msg, nil, parts)
}

func rewriteParams(msg []byte, drop []string, add [][]byte) ([]byte, error) {
	ms, err := rawjson.Object(msg)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(msg)+64)
	out = append(out, '{')
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		if string(m.Key) != "params" {
			out = append(out, msg[m.Name:m.End]...)
			continue
		}
		out = append(out, msg[m.Name:m.Start]...)
		v := msg[m.Start:m.End]
		ps, err := rawjson.Object(v)
		if err != nil {
			return nil, err
		}
		out = append(out, '{')
		n := 0
		for _, pm := range ps {
			if slices.Contains(drop, string(pm.Key)) {
				continue
			}
			if n > 0 {
				out = append(out, ',')
			}
			n++
			out = append(out, v[pm.Name:pm.End]...)
		}
		if len(add) > 0 && n > 0 {
			out = append(out, ',')
		}
		for _, a := range add {
			out = append(out, a...)
		}
		out = append(out, '}')
	}
	return append(out, '}'), nil
}
