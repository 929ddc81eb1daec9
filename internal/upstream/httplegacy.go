package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mrtr-wasm/mrtr-wasm/internal/rawjson"
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

	next     atomic.Int64          // numbers the ids requests are sent under (see withID)
	inflight map[inflight][][]byte // the proxy's ids of the calls in flight
}

// inflight names a call by its principal and the client's id.
type inflight struct{ principal, clientID string }

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
	if err == nil && status < 300 && isResult(b) {
		return u, nil
	}
	l := &LegacyHTTP{HTTP: u, sessions: map[string]string{}, roots: roots, inflight: map[inflight][][]byte{}}
	res, _, err := l.initialize(ctx)
	if err != nil {
		return u, nil // not a legacy server either: leave it to the calls
	}
	l.init = res
	return l, nil
}

// isResult reports whether b is a JSON-RPC answer with a result and no
// error (read by member, not by searching the text: a discover result
// may well hold the word "error" in a description).
func isResult(b []byte) bool {
	ms, err := rawjson.Object(bytes.TrimSpace(b))
	if err != nil {
		return false
	}
	_, res := rawjson.Find(ms, "result")
	_, e := rawjson.Find(ms, "error")
	return res && !e
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
// the principal ctx names, under an id of the proxy's: a principal's calls
// share the session, and two of them may use the same id (the server
// refuses a duplicate in flight). The response gets the client's id back.
// A session the server no longer knows (HTTP 404) is opened again once.
func (l *LegacyHTTP) Call(ctx context.Context, msg []byte, h http.Header, onMessage func(raw []byte) error) ([]byte, error) {
	m, err := parseMessage(withoutModernMeta(msg))
	if err != nil || m.method == "" || !m.hasID {
		return nil, fmt.Errorf("upstream: Call needs a JSON-RPC request: %w", errOr(err, "no method or no id"))
	}
	clientID := m.value(m.id)
	// A string no client is likely to use: a client's notifications/cancelled
	// for an id that is not in flight then names no call (see Send).
	id := appendJSONString(nil, "mrtr-"+strconv.FormatInt(l.next.Add(1), 10))
	msg = withID(m, id)
	key := inflight{principalOf(ctx), string(clientID)}
	l.mu.Lock()
	l.inflight[key] = append(l.inflight[key], id)
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		ids := slices.DeleteFunc(l.inflight[key], func(v []byte) bool { return bytes.Equal(v, id) })
		if len(ids) == 0 {
			delete(l.inflight, key)
		} else {
			l.inflight[key] = ids
		}
		l.mu.Unlock()
	}()
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
	if err != nil {
		return nil, err
	}
	if r, perr := parseMessage(b); perr == nil && r.hasID {
		b = withID(r, clientID)
	}
	return b, nil
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

// Send delivers msg on the session of the principal ctx names. A client's
// notifications/cancelled names the call by the client's id: it gets the
// id Call sent that call under, when exactly one call of the principal's
// with that id is in flight; otherwise it names no call upstream.
func (l *LegacyHTTP) Send(ctx context.Context, msg []byte, h http.Header) error {
	if bytes.Contains(msg, []byte(`"notifications/cancelled"`)) {
		msg = l.cancelled(principalOf(ctx), msg)
	}
	sid, err := l.session(ctx, principalOf(ctx), false)
	if err != nil {
		return err
	}
	return l.HTTP.Send(ctx, msg, legacyHeader(h, sid))
}

// cancelled returns a client's notifications/cancelled with the id its
// call was sent under (msg as it is when it is not one, or names no single
// call in flight).
func (l *LegacyHTTP) cancelled(principal string, msg []byte) []byte {
	m, err := parseMessage(msg)
	if err != nil || m.method != "notifications/cancelled" || m.hasID {
		return msg
	}
	p, pms, _, err := paramsObject(m)
	if err != nil {
		return msg
	}
	r, ok := find(pms, "requestId")
	if !ok {
		return msg
	}
	l.mu.Lock()
	ids := l.inflight[inflight{principal, string(m.raw[p.Start+r.Start : p.Start+r.End])}]
	var id []byte
	if len(ids) == 1 {
		id = ids[0]
	}
	l.mu.Unlock()
	if id == nil {
		return msg
	}
	return splice(m.raw, edit{p.Start + r.Start, p.Start + r.End, id})
}
