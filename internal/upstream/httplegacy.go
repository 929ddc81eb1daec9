package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
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
	sessions map[string]*legacySession // by principal
	idle     time.Duration             // a session unused this long is ended
	every    time.Duration             // how often idle sessions are looked for
	most     int                       // sessions kept at most (the least recently used goes)
	swept    time.Time

	next     atomic.Int64          // numbers the ids requests are sent under (see withID)
	inflight map[inflight][][]byte // the proxy's ids of the calls in flight
}

// legacySession is one principal's upstream session. The first call of a
// principal opens it; calls that come meanwhile wait for that one
// initialize instead of opening sessions of their own.
type legacySession struct {
	ready chan struct{} // closed when id and err are set
	id    string
	err   error
	used  time.Time // the last call that took it (under LegacyHTTP.mu)
	calls int       // calls holding it now (under LegacyHTTP.mu)
}

// Defaults for the upstream sessions of a LegacyHTTP: a proxy in front of
// many users (OAuth principals) must not keep one session per user for
// ever, at the upstream or in its own memory.
const (
	legacySessionIdle  = 30 * time.Minute
	legacySessionSweep = time.Minute
	legacySessionsMost = 4096
)

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
		mcphttp.ProtocolVersion + `","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	h := http.Header{"Mcp-Method": {"server/discover"}, "Mcp-Protocol-Version": {mcphttp.ProtocolVersion}}
	b, _, status, err := u.callHeader(ctx, disc, h, nil)
	if err == nil && status < 300 && isResult(b) {
		return u, nil
	}
	l := &LegacyHTTP{HTTP: u, sessions: map[string]*legacySession{}, roots: roots, inflight: map[inflight][][]byte{},
		idle: legacySessionIdle, every: legacySessionSweep, most: legacySessionsMost}
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

// Sessions is how many upstream sessions are held now (one per principal;
// the least recently used idle one goes past 4096, and idle ones after
// 30 min).
func (l *LegacyHTTP) Sessions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sessions)
}

// Discovery is the initialize result; the upstream is legacy.
func (l *LegacyHTTP) Discovery() (json.RawMessage, bool) { return l.init, true }

// session returns the principal's session, held until done. stale is a
// session id the server said it no longer knows (HTTP 404): unless another
// call has opened a new one since, it is opened again. Idle sessions, and
// the least recently used past the limit, are ended (DELETE, as the
// Streamable HTTP transport asks of a client that is done with one).
func (l *LegacyHTTP) session(ctx context.Context, principal, stale string) (*legacySession, error) {
	now := time.Now()
	l.mu.Lock()
	ended := l.sweep(now)
	s := l.sessions[principal]
	if s != nil {
		select {
		case <-s.ready:
			if s.err != nil || (stale != "" && s.id == stale) {
				s = nil
			}
		default: // being opened: wait for it below
		}
	}
	open := s == nil
	if open {
		if len(l.sessions) >= l.most {
			ended = append(ended, l.evictLocked()...)
		}
		s = &legacySession{ready: make(chan struct{})}
		l.sessions[principal] = s
	}
	s.used = now
	s.calls++
	l.mu.Unlock()
	l.end(ended)
	if open {
		ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
		_, sid, err := l.initialize(ictx)
		cancel()
		l.mu.Lock()
		s.id, s.err = sid, err
		close(s.ready)
		if err != nil && l.sessions[principal] == s {
			delete(l.sessions, principal)
		}
		l.mu.Unlock()
	} else {
		select {
		case <-s.ready:
		case <-ctx.Done():
			l.done(s)
			return nil, transportError(ctx, ctx.Err())
		}
	}
	if s.err != nil {
		l.done(s)
		return nil, s.err
	}
	return s, nil
}

// done releases a session session returned.
func (l *LegacyHTTP) done(s *legacySession) {
	l.mu.Lock()
	s.calls--
	l.mu.Unlock()
}

// sweep removes the sessions idle past l.idle (at most every l.every) and
// returns their ids to end. l.mu is held.
func (l *LegacyHTTP) sweep(now time.Time) []string {
	if now.Sub(l.swept) < l.every {
		return nil
	}
	l.swept = now
	var ended []string
	for p, s := range l.sessions {
		if s.calls == 0 && now.Sub(s.used) > l.idle && isReady(s) {
			delete(l.sessions, p)
			ended = append(ended, s.id)
		}
	}
	return ended
}

// evictLocked removes the least recently used session no call holds.
func (l *LegacyHTTP) evictLocked() []string {
	var (
		oldest string
		at     time.Time
	)
	for p, s := range l.sessions {
		if s.calls == 0 && isReady(s) && (oldest == "" || s.used.Before(at)) {
			oldest, at = p, s.used
		}
	}
	if oldest == "" {
		return nil // every session is in use: keep them, and the new one
	}
	id := l.sessions[oldest].id
	delete(l.sessions, oldest)
	return []string{id}
}

func isReady(s *legacySession) bool {
	select {
	case <-s.ready:
		return s.err == nil
	default:
		return false
	}
}

// end asks the server to end sessions, off the caller's path and best
// effort: a server that ignores it forgets them at its own idle limit.
func (l *LegacyHTTP) end(ids []string) {
	ids = slices.DeleteFunc(ids, func(id string) bool { return id == "" })
	if len(ids) == 0 {
		return
	}
	go func() {
		for _, id := range ids {
			l.endSession(id)
		}
	}()
}

func (l *LegacyHTTP) endSession(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), min(l.timeout, 5*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, l.url, nil)
	if err != nil {
		return
	}
	for k, v := range l.header {
		req.Header[k] = v
	}
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", legacyVersion)
	resp, err := l.client.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
}

// Close ends every session the proxy holds (within a few seconds) and
// closes the connection pool.
func (l *LegacyHTTP) Close() error {
	l.mu.Lock()
	var ids []string
	for p, s := range l.sessions {
		if isReady(s) {
			ids = append(ids, s.id)
		}
		delete(l.sessions, p)
	}
	l.mu.Unlock()
	deadline := time.Now().Add(2 * time.Second)
	for _, id := range ids {
		if id == "" || time.Now().After(deadline) {
			continue
		}
		l.endSession(id)
	}
	return l.HTTP.Close()
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
		if ctx.Err() != nil {
			// Ended early (the client cancelled, or the timeout): a server
			// of this era does not stop for a closed request, so tell it,
			// under the id it knows the call by (unique: never a later
			// call's).
			go l.cancelSent(caller, id, h)
		}
		return nil, err
	}
	if r, perr := parseMessage(b); perr == nil && r.hasID {
		b = withID(r, clientID)
	}
	return b, nil
}

func (l *LegacyHTTP) call(ctx context.Context, msg []byte, h http.Header, onMessage func(raw []byte) error) ([]byte, error) {
	p := principalOf(ctx)
	stale := ""
	for try := 0; ; try++ {
		s, err := l.session(ctx, p, stale)
		if err != nil {
			return nil, err
		}
		b, _, status, err := l.HTTP.callHeader(ctx, msg, legacyHeader(h, s.id), onMessage)
		l.done(s)
		if status == http.StatusNotFound && try == 0 {
			stale = s.id
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
	s, err := l.session(ctx, principalOf(ctx), "")
	if err != nil {
		return err
	}
	defer l.done(s)
	return l.HTTP.Send(ctx, msg, legacyHeader(h, s.id))
}

// cancelSent sends notifications/cancelled for a call sent under id, on
// the session of the principal ctx names, off the caller's path.
func (l *LegacyHTTP) cancelSent(ctx context.Context, id []byte, h http.Header) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(l.timeout, 5*time.Second))
	defer cancel()
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + string(id) + `,"reason":"the proxy's call ended"}}`)
	s, err := l.session(ctx, principalOf(ctx), "")
	if err != nil {
		return
	}
	defer l.done(s)
	_ = l.HTTP.Send(ctx, msg, legacyHeader(h, s.id))
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
	r, ok := rawjson.Find(pms, "requestId")
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
