package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// LegacyHTTP speaks 2025-11-25 to a Streamable HTTP server that predates
// server/discover. Such a server keeps state per session, so each principal
// gets an upstream session of its own (initialize on first use, again if
// the server forgets it): two users never share one. What is shared: the
// URL, the static --upstream-header credentials, and the connection pool.
// A server-to-client request that belongs to no call would come on the
// session's GET stream, which the proxy never opens: the server's SDK
// drops it (nothing waits at the proxy).
type LegacyHTTP struct {
	*HTTP
	init  json.RawMessage
	roots bool

	mu       sync.Mutex
	sessions map[string]string // principal -> Mcp-Session-Id
}

// DetectHTTP asks u for server/discover; a server that refuses it but
// answers a 2025-11-25 initialize is wrapped in a LegacyHTTP, whose
// initialize declares roots when roots is set (see LegacyCapabilities). A
// server that answers neither is returned as it is (its calls will tell).
func DetectHTTP(ctx context.Context, u *HTTP, roots bool) (Upstream, error) {
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	disc := []byte(`{"jsonrpc":"2.0","id":"mrtr-proxy-discover","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` +
		ProtocolVersion + `","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	h := http.Header{"Mcp-Method": {"server/discover"}, "Mcp-Protocol-Version": {ProtocolVersion}}
	b, _, status, err := u.callHeader(ctx, disc, h, nil)
	if err == nil && status < 300 && !bytes.Contains(b, []byte(`"error"`)) {
		return u, nil
	}
	l := &LegacyHTTP{HTTP: u, sessions: map[string]string{}, roots: roots}
	res, _, err := l.initialize(ctx)
	if err != nil {
		return u, nil // not a legacy server either: leave it to the calls
	}
	l.init = res
	return l, nil
}

// initialize opens an upstream session and returns the initialize result
// and the session id.
func (l *LegacyHTTP) initialize(ctx context.Context) (json.RawMessage, string, error) {
	msg := []byte(`{"jsonrpc":"2.0","id":"mrtr-proxy-init","method":"initialize","params":{"protocolVersion":"` + legacyVersion +
		`","capabilities":` + LegacyCapabilities(l.roots) + `,"clientInfo":{"name":"mrtr-wasm-proxy","version":"dev"}}}`)
	h := http.Header{"Mcp-Protocol-Version": {legacyVersion}}
	b, hdr, status, err := l.HTTP.callHeader(ctx, msg, h, nil)
	if err != nil {
		return nil, "", err
	}
	var r struct {
		Result json.RawMessage `json:"result"`
	}
	if status >= 300 || json.Unmarshal(b, &r) != nil || len(r.Result) == 0 {
		return nil, "", Errorf(CodeBadResponse, fmt.Sprintf("the upstream refused initialize (HTTP %d)", status), nil)
	}
	sid := hdr.Get("Mcp-Session-Id")
	nh := http.Header{"Mcp-Protocol-Version": {legacyVersion}}
	if sid != "" {
		nh.Set("Mcp-Session-Id", sid)
	}
	if err := l.HTTP.Send(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nh); err != nil {
		return nil, "", err
	}
	return r.Result, sid, nil
}

// Discovery is the initialize result; the upstream is legacy.
func (l *LegacyHTTP) Discovery() (json.RawMessage, bool) { return l.init, true }

func (l *LegacyHTTP) session(ctx context.Context, principal string, fresh bool) (string, error) {
	l.mu.Lock()
	sid, ok := l.sessions[principal]
	l.mu.Unlock()
	if ok && !fresh {
		return sid, nil
	}
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
	defer cancel()
	_, sid, err := l.initialize(ictx)
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	l.sessions[principal] = sid
	l.mu.Unlock()
	return sid, nil
}

func legacyHeader(h http.Header, sid string) http.Header {
	out := h.Clone()
	if out == nil {
		out = http.Header{}
	}
	out.Del("Mcp-Method")
	out.Del("Mcp-Name")
	out.Set("Mcp-Protocol-Version", legacyVersion)
	if sid != "" {
		out.Set("Mcp-Session-Id", sid)
	}
	return out
}

// Call sends msg (without its 2026-07-28 _meta keys) on the session of
// the principal ctx names; a session the server no longer knows (HTTP 404)
// is opened again once.
func (l *LegacyHTTP) Call(ctx context.Context, msg []byte, h http.Header, onMessage func(raw []byte) error) ([]byte, error) {
	msg = withoutModernMeta(msg)
	caller := ctx
	ctx, onMessage, cancel := callTimeout(ctx, l.timeout, onMessage)
	defer cancel()
	if !l.roots && onMessage != nil {
		next := onMessage
		onMessage = func(raw []byte) error {
			// roots/list was not declared to the server: no client is asked.
			if bytes.Contains(raw, []byte(`"roots/list"`)) {
				if m, err := parseMessage(raw); err == nil && m.hasID && m.method == "roots/list" {
					return l.Send(ctx, RefuseUndeclared(m.value(m.id), m.method), h)
				}
			}
			return next(raw)
		}
	}
	b, err := l.call(ctx, msg, h, onMessage)
	l.noteHealth(caller, err)
	return b, err
}

func (l *LegacyHTTP) call(ctx context.Context, msg []byte, h http.Header, onMessage func(raw []byte) error) ([]byte, error) {
	p := principalOf(ctx)
	for try := 0; ; try++ {
		sid, err := l.session(ctx, p, try > 0)
		if err != nil {
			return nil, err
		}
		b, _, status, err := l.HTTP.callHeader(ctx, msg, legacyHeader(h, sid), onMessage)
		if status == http.StatusNotFound && try == 0 {
			continue
		}
		return b, err
	}
}

// Send delivers msg on the session of the principal ctx names.
func (l *LegacyHTTP) Send(ctx context.Context, msg []byte, h http.Header) error {
	sid, err := l.session(ctx, principalOf(ctx), false)
	if err != nil {
		return err
	}
	return l.HTTP.Send(ctx, msg, legacyHeader(h, sid))
}
