package upstream

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"

	"github.com/mrtr-wasm/mrtr-wasm/internal/rawjson"
)

// HTTPOptions configure a Streamable HTTP upstream.
type HTTPOptions struct {
	// URL is the upstream's MCP endpoint, e.g. http://127.0.0.1:9000/mcp.
	URL string
	// Header is sent with every request (static credentials from
	// --upstream-header). It is never logged.
	Header http.Header
	// Timeout bounds one whole call, streamed messages included, or only
	// the start of a call marked AsStream (default 60 s).
	Timeout time.Duration
	// MaxBody bounds a JSON body or one event of a stream (default 8 MiB).
	MaxBody int64
	// Transport replaces the pooled default (tests).
	Transport http.RoundTripper
	// TokenSource, when set, authenticates every request with its access
	// token (Authorization: Bearer; --upstream-oauth-*: OAuth client
	// credentials), fetched again when it expires.
	TokenSource oauth2.TokenSource
}

// HTTP is an upstream reached over Streamable HTTP (MCP 2026-07-28:
// stateless, one POST per message; the answer is application/json or a
// text/event-stream that ends with the response).
type HTTP struct {
	url     string
	header  http.Header
	timeout time.Duration
	maxBody int64
	client  *http.Client
	down    atomic.Pointer[Error] // the last failure, until a call succeeds
}

// NewHTTP checks the options and builds the upstream.
func NewHTTP(o HTTPOptions) (*HTTP, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("upstream: the URL must be http:// or https:// with a host")
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 8 << 20
	}
	rt := o.Transport
	if rt == nil {
		rt = &http.Transport{
			Proxy:                 nil, // loopback and private upstreams: never an environment proxy
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:          256,
			MaxIdleConnsPerHost:   128,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: o.Timeout,
			ExpectContinueTimeout: time.Second,
		}
	}
	if o.TokenSource != nil {
		rt = &oauth2.Transport{Source: o.TokenSource, Base: rt}
	}
	h := o.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	return &HTTP{url: o.URL, header: h, timeout: o.Timeout, maxBody: o.MaxBody,
		client: &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

// ID is the upstream's URL without user info or fragment, and with a
// hash in place of its query: the query may hold a key, but two upstreams
// that differ only there (?tenant=a, ?tenant=b) are two upstreams, and a
// state sealed for one must not open at the other.
func (u *HTTP) ID() string {
	p, err := url.Parse(u.url)
	if err != nil {
		return u.url
	}
	q := p.RawQuery
	p.User, p.RawQuery, p.Fragment = nil, "", ""
	if q == "" {
		return p.String()
	}
	sum := sha256.Sum256([]byte(q))
	return p.String() + "#query-sha256=" + hex.EncodeToString(sum[:8])
}

// Health is the last failure, until a call succeeds.
func (u *HTTP) Health() error {
	if e := u.down.Load(); e != nil {
		return e
	}
	return nil
}

// Close drops idle connections.
func (u *HTTP) Close() error {
	u.client.CloseIdleConnections()
	return nil
}

func (u *HTTP) newRequest(ctx context.Context, msg []byte, h http.Header) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.url, bytes.NewReader(msg))
	if err != nil {
		return nil, Errorf(CodeUnavailable, "the upstream request could not be built", nil)
	}
	for k, v := range u.header {
		req.Header[k] = v
	}
	for k, v := range withoutInvalidTrace(h) {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return req, nil
}

// Call posts msg and returns the response to it; see Upstream.
func (u *HTTP) Call(ctx context.Context, msg []byte, h http.Header, onMessage func(raw []byte) error) ([]byte, error) {
	caller := ctx
	if !isStream(ctx) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, u.timeout)
		defer cancel()
	}
	out, err := u.call(ctx, msg, h, onMessage)
	u.noteHealth(caller, err)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// noteHealth records how a call ended for Health: a success clears the
// last failure; a failure to reach the upstream or a timeout of its own
// is kept. A call whose caller went away (its context cancelled, or its
// own deadline passed) says nothing about the upstream and changes nothing.
func (u *HTTP) noteHealth(caller context.Context, err error) {
	if err == nil {
		u.down.Store(nil)
		return
	}
	if caller.Err() != nil {
		return
	}
	if e, ok := AsError(err); ok && (e.Code == CodeUnavailable || e.Code == CodeTimeout) {
		u.down.Store(e)
	}
}

func (u *HTTP) call(ctx context.Context, msg []byte, h http.Header, onMessage func(raw []byte) error) ([]byte, error) {
	b, _, _, err := u.callHeader(ctx, msg, h, onMessage)
	return b, err
}

// callHeader is call that also returns the response's headers (a legacy
// upstream's Mcp-Session-Id).
//
// The request runs on a context of its own that ends with ctx, so that
// a stream whose response has come can be read to its end after the call
// returns (see drain).
func (u *HTTP) callHeader(ctx context.Context, msg []byte, h http.Header, onMessage func(raw []byte) error) ([]byte, http.Header, int, error) {
	rctx, rcancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, rcancel)
	req, err := u.newRequest(rctx, msg, h)
	if err != nil {
		stop()
		rcancel()
		return nil, nil, 0, err
	}
	resp, err := u.client.Do(req)
	if err != nil {
		stop()
		rcancel()
		return nil, nil, 0, transportError(ctx, err)
	}
	b, err := u.readResponse(ctx, resp, onMessage)
	if err == nil && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && stop() {
		go drain(resp.Body, rcancel)
	} else {
		resp.Body.Close()
		stop()
		rcancel()
	}
	return b, resp.Header, resp.StatusCode, err
}

// drainWait bounds how long a stream may go on after its response.
const drainWait = time.Second

// drain reads what is left of an event stream after its response: the
// upstream ends the stream right after it, and a connection read to the
// end goes back to the pool, where one closed early is dialled again (a
// new TCP, or TLS, handshake for about one call in six, as measured). What
// it reads is dropped; a stream that goes on is cut after drainWait.
func drain(body io.ReadCloser, cancel context.CancelFunc) {
	t := time.AfterFunc(drainWait, cancel)
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	t.Stop()
	body.Close()
	cancel()
}

func (u *HTTP) readResponse(ctx context.Context, resp *http.Response, onMessage func(raw []byte) error) ([]byte, error) {
	if resp.StatusCode >= 500 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, Errorf(CodeUnavailable, fmt.Sprintf("the upstream answered HTTP %d", resp.StatusCode), nil)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "text/event-stream":
		streamStarted(ctx)
		return u.readStream(ctx, resp.Body, onMessage)
	case "application/json":
		b, err := u.readBody(ctx, resp.Body)
		if err != nil {
			return nil, err
		}
		// A 4xx with a JSON-RPC error (a header mismatch, a bad request)
		// is the upstream's answer: relay it.
		if ok, err := classify(b); err != nil || !ok {
			return nil, Errorf(CodeBadResponse, fmt.Sprintf("the upstream answered HTTP %d without a JSON-RPC response", resp.StatusCode), nil)
		}
		return b, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return nil, Errorf(CodeBadResponse, fmt.Sprintf("the upstream answered HTTP %d with content type %q", resp.StatusCode, ct), nil)
}

func (u *HTTP) readBody(ctx context.Context, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, u.maxBody+1))
	if err != nil {
		return nil, transportError(ctx, err)
	}
	if int64(len(b)) > u.maxBody {
		return nil, Errorf(CodeTooLarge, fmt.Sprintf("the upstream's answer is over the limit of %d bytes", u.maxBody), nil)
	}
	return b, nil
}

// streamReaders are readStream's buffers. A fresh 32 KiB one per call
// was over half of what a proxied call allocated (and zeroed).
var streamReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

// readStream relays each event of a text/event-stream as it arrives and
// returns the first JSON-RPC response.
func (u *HTTP) readStream(ctx context.Context, body io.Reader, onMessage func(raw []byte) error) ([]byte, error) {
	br := streamReaders.Get().(*bufio.Reader)
	br.Reset(body)
	defer func() {
		br.Reset(nil) // what it holds is copied out or dropped (drain reads the rest from body)
		streamReaders.Put(br)
	}()
	lines := &sseLines{br: br, max: u.maxBody}
	var data []byte
	inData := false
	for {
		line, err := lines.next()
		if err != nil {
			if e, ok := AsError(err); ok {
				return nil, e
			}
			if errors.Is(err, io.EOF) {
				return nil, Errorf(CodeBadResponse, "the upstream's stream ended without a response", nil)
			}
			return nil, transportError(ctx, err)
		}
		if len(line) == 0 {
			if !inData {
				continue
			}
			msg := data
			data, inData = nil, false
			if len(bytes.TrimSpace(msg)) == 0 {
				continue // a priming event (SEP-1699): an id and no data
			}
			resp, err := classify(msg)
			if err != nil {
				return nil, Errorf(CodeBadResponse, "the upstream's stream carried an event that is not JSON, or repeats a key", nil)
			}
			if resp {
				return msg, nil
			}
			if onMessage != nil {
				if err := onMessage(msg); err != nil {
					return nil, err
				}
			}
			continue
		}
		v, ok := bytes.CutPrefix(line, []byte("data:"))
		switch {
		case ok:
			v = bytes.TrimPrefix(v, []byte(" "))
		case string(line) == "data":
			v = nil // a field without a colon: an empty data line
		default:
			continue // event:, id:, retry:, comments
		}
		n := len(data) + len(v)
		if inData {
			n++ // the newline between data lines counts too
		}
		if int64(n) > u.maxBody {
			return nil, Errorf(CodeTooLarge, fmt.Sprintf("an event of the upstream's stream is over the limit of %d bytes", u.maxBody), nil)
		}
		if inData {
			data = append(data, '\n')
		}
		data = append(data, v...)
		inData = true
	}
}

// sseLines reads an event stream's lines. A line ends at CRLF, LF or a
// lone CR, as the SSE format has it; a CR is taken as the end at once
// (waiting to see whether LF follows would hold the event back until the
// next byte), and an LF right after it is skipped on the next read.
type sseLines struct {
	br     *bufio.Reader
	max    int64
	skipLF bool
	line   []byte
}

// next returns the next line without its end, valid until the next call.
func (r *sseLines) next() ([]byte, error) {
	r.line = r.line[:0]
	for {
		if _, err := r.br.Peek(1); err != nil {
			return nil, err
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		if r.skipLF {
			r.skipLF = false
			if buf[0] == '\n' {
				_, _ = r.br.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(buf, "\r\n")
		take := i
		if i < 0 {
			take = len(buf)
		}
		if int64(len(r.line)+take) > r.max {
			return nil, Errorf(CodeTooLarge, fmt.Sprintf("a line of the upstream's stream is over the limit of %d bytes", r.max), nil)
		}
		r.line = append(r.line, buf[:take]...)
		if i < 0 {
			_, _ = r.br.Discard(take)
			continue
		}
		r.skipLF = buf[i] == '\r'
		_, _ = r.br.Discard(i + 1)
		return r.line, nil
	}
}

// classify reports whether the JSON text b is one JSON-RPC response: an
// object with an id and a result or an error, and no method. Text that is
// not JSON, or an object that repeats a key (two parsers could each keep
// a different copy), is an error. Only the top-level members are read.
func classify(b []byte) (response bool, err error) {
	if !json.Valid(b) {
		return false, errNotJSON
	}
	t := bytes.TrimSpace(b)
	if t[0] != '{' {
		return false, nil
	}
	ms, err := rawjson.Object(t)
	if err != nil {
		return false, err
	}
	if m, ok := rawjson.Find(ms, "method"); ok && string(t[m.Start:m.End]) != "null" {
		return false, nil
	}
	_, id := rawjson.Find(ms, "id")
	_, result := rawjson.Find(ms, "result")
	_, e := rawjson.Find(ms, "error")
	return id && (result || e), nil
}

var errNotJSON = errors.New("not JSON")

// Send posts a message that has no response.
func (u *HTTP) Send(ctx context.Context, msg []byte, h http.Header) error {
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	req, err := u.newRequest(ctx, msg, h)
	if err != nil {
		return err
	}
	resp, err := u.client.Do(req)
	if err != nil {
		return transportError(ctx, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return Errorf(CodeUnavailable, fmt.Sprintf("the upstream answered HTTP %d", resp.StatusCode), nil)
	}
	return nil
}

// transportError classifies a failure to reach or read the upstream. The
// cause kept for logs drops *url.Error's URL (it may hold credentials).
func transportError(ctx context.Context, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return Errorf(CodeTimeout, "the upstream did not answer in time", err)
	}
	if errors.Is(err, context.Canceled) {
		return Errorf(CodeUnavailable, "the call was cancelled", err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return Errorf(CodeTimeout, "the upstream did not answer in time", err)
	}
	if strings.Contains(err.Error(), "refused") {
		return Errorf(CodeUnavailable, "the upstream refused the connection", err)
	}
	return Errorf(CodeUnavailable, "the upstream could not be reached or closed the connection", err)
}
