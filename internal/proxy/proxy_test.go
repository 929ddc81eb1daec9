package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/testenv"
	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	_ "github.com/mrtr-wasm/mrtr-wasm/ledger/redis"
	"github.com/mrtr-wasm/mrtr-wasm/policy"
)

// The upstreams here are hostile on purpose (they are what is tested
// against); the guard is the real guard.wasm with the shipped proxy policy.

// testKeys is one key shared by every proxy of a test, as replicas share
// MRTR_KEYS.
var testKeys = host.NewKeyring()

func newGuard(t testing.TB, opts ...host.Option) *host.Guard {
	t.Helper()
	ctx := context.Background()
	pol, err := policy.Default(ctx, policy.WithData("proxy"))
	if err != nil {
		t.Fatal(err)
	}
	base := []host.Option{host.WithKeys(testKeys), host.WithAudience("proxy-test"), host.WithPolicy(pol),
		host.WithMaxStateBytes(64 << 10), host.WithCompilationCache(filepath.Join(os.TempDir(), "mrtr-wasm-proxy-test-cache"))}
	g, err := host.New(ctx, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	return g
}

// newProxy serves a proxy for up on a loopback port and returns its base URL.
func newProxy(t testing.TB, g *host.Guard, up upstream.Upstream) (string, *Proxy) {
	t.Helper()
	return serveProxy(t, Config{Guard: g, Upstream: up})
}

// serveProxy serves a proxy of cfg on a loopback port and returns its
// base URL.
func serveProxy(t testing.TB, cfg Config) (string, *Proxy) {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p.Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), p
}

func httpUpstream(t testing.TB, url string, opts ...func(*upstream.HTTPOptions)) *upstream.HTTP {
	t.Helper()
	o := upstream.HTTPOptions{URL: url, Timeout: 5 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	u, err := upstream.NewHTTP(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	return u
}

type rpcMsg struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

var idSeq atomic.Int64

// toolRequest is a 2026-07-28 tools/call to base/mcp with its headers;
// extra is spliced into params.
func toolRequest(base string, id int64, name, args, extra string) *http.Request {
	body := `{"jsonrpc":"2.0","id":` + fmt.Sprint(id) + `,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}` + extra + `}}`
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", name)
	return req
}

// callTool sends tools/call through the proxy; extra is spliced into params.
func callTool(t testing.TB, base, name, args, extra string) (*rpcMsg, int) {
	t.Helper()
	id := idSeq.Add(1)
	m, resp := doRPC(t, toolRequest(base, id, name, args, extra), id)
	return m, resp.StatusCode
}

// doRPC sends req (a request of id) and reads the JSON-RPC answer, the
// last event of a stream; the response's body is read and closed.
func doRPC(t testing.TB, req *http.Request, id int64) (*rpcMsg, *http.Response) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		for _, line := range bytes.Split(b, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				last = d
			}
		}
		b = last
	}
	var m rpcMsg
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON-RPC message (HTTP %d): %q", resp.StatusCode, b)
	}
	if string(m.ID) != fmt.Sprint(id) {
		t.Fatalf("id %s, want %d", m.ID, id)
	}
	return &m, resp
}

// rpcServer answers every tools/call with f(request body).
func rpcServer(t testing.TB, f func(w http.ResponseWriter, body []byte)) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f(w, b)
	}))
	t.Cleanup(s.Close)
	return s
}

func idOf(body []byte) string {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &m)
	return string(m.ID)
}

func writeJSON(w http.ResponseWriter, s string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, s)
}

func okResult(body []byte) string {
	return `{"jsonrpc":"2.0","id":` + idOf(body) + `,"result":{"content":[{"type":"text","text":"ok"}]}}`
}

func isToolsList(body []byte) bool { return bytes.Contains(body, []byte(`"tools/list"`)) }

func TestHostileUpstreams(t *testing.T) {
	g := newGuard(t)
	var mode atomic.Value
	mode.Store("ok")
	var refusals atomic.Int64
	killed := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if isToolsList(body) {
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[]}}`)
			return
		}
		if bytes.Contains(body, []byte(`"error"`)) && !bytes.Contains(body, []byte(`"method"`)) {
			refusals.Add(1) // the proxy's refusal of our server-to-client request
			w.WriteHeader(http.StatusAccepted)
			return
		}
		switch mode.Load().(string) {
		case "password":
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"resultType":"input_required","inputRequests":{"login":{"method":"elicitation/create","params":{"message":"Sign in","requestedSchema":{"type":"object","properties":{"password":{"type":"string"}}}}}},"requestState":"x"}}`)
		case "server-request":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"elicitation/create\",\"params\":{\"message\":\"pin?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}}\n\n")
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n")
			fmt.Fprint(w, "event: message\ndata: "+okResult(body)+"\n\n")
		case "garbage":
			writeJSON(w, "this is not JSON-RPC")
		case "slow":
			time.Sleep(2 * time.Second)
			writeJSON(w, okResult(body))
		case "die":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n")
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			killed <- struct{}{}
		case "huge":
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"content":[{"type":"text","text":"`+strings.Repeat("x", 4096)+`"}]}}`)
		case "5xx":
			http.Error(w, "boom", http.StatusBadGateway)
		default:
			writeJSON(w, okResult(body))
		}
	}))
	defer up.Close()
	u := httpUpstream(t, up.URL, func(o *upstream.HTTPOptions) { o.Timeout = 500 * time.Millisecond; o.MaxBody = 2048 })
	base, _ := newProxy(t, g, u)

	cases := []struct {
		mode, code string
	}{
		{"garbage", upstream.CodeBadResponse},
		{"slow", upstream.CodeTimeout},
		{"die", upstream.CodeUnavailable},
		{"huge", upstream.CodeTooLarge},
		{"5xx", upstream.CodeUnavailable},
	}
	for _, c := range cases {
		mode.Store(c.mode)
		m, _ := callTool(t, base, "t", `{}`, "")
		if m.Error == nil || m.Error.Code != upstream.JSONRPCCode || !strings.Contains(string(m.Error.Data), c.code) || !strings.Contains(string(m.Error.Data), `"retryable":true`) {
			t.Errorf("%s: got %+v, want -32603 with %s", c.mode, m, c.code)
		}
		mode.Store("ok")
		if m, _ := callTool(t, base, "t", `{}`, ""); m.Error != nil || !strings.Contains(string(m.Result), `"ok"`) {
			t.Errorf("after %s the next call was not served: %+v", c.mode, m)
		}
	}

	mode.Store("password")
	m, _ := callTool(t, base, "login", `{}`, "")
	if m.Error != nil || !bytes.Contains(m.Result, []byte(`"isError":true`)) || !bytes.Contains(m.Result, []byte("login.password")) || !bytes.Contains(m.Result, []byte("URL mode")) {
		t.Errorf("password form: %s %+v", m.Result, m.Error)
	}
	if bytes.Contains(m.Result, []byte("inputRequests")) {
		t.Error("the refused form reached the client")
	}

	mode.Store("server-request")
	m, _ = callTool(t, base, "t", `{}`, "")
	if m.Error != nil || !strings.Contains(string(m.Result), `"ok"`) {
		t.Errorf("server-to-client request: the call was not served: %+v", m)
	}
	if refusals.Load() != 1 {
		t.Errorf("the upstream got %d refusals of its server-to-client request, want 1", refusals.Load())
	}
	mode.Store("ok")
	if m, _ := callTool(t, base, "t", `{}`, ""); m.Error != nil {
		t.Errorf("after a server-to-client request: %+v", m)
	}
}

// /readyz reports the upstream; /healthz says only that the process
// lives, so an orchestrator does not restart a proxy for its upstream.
func TestReadyzReportsTheUpstream(t *testing.T) {
	g := newGuard(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: connection refused
	u := httpUpstream(t, "http://"+addr+"/mcp")
	base, _ := newProxy(t, g, u)
	get := func(path string) int {
		r, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	health := func() int {
		if h := get("/healthz"); h != 200 {
			t.Fatalf("healthz: %d, want 200 whatever the upstream does", h)
		}
		return get("/readyz")
	}
	if h := health(); h != 200 {
		t.Fatalf("readyz before any call: %d", h)
	}
	m, _ := callTool(t, base, "t", `{}`, "")
	if m.Error == nil || !strings.Contains(string(m.Data()), upstream.CodeUnavailable) {
		t.Fatalf("refused connection: %+v", m)
	}
	if h := health(); h != http.StatusServiceUnavailable {
		t.Fatalf("readyz after a refused connection: %d, want 503", h)
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skip("the port was taken meanwhile")
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		writeJSON(w, okResult(b))
	})}
	go srv.Serve(ln)
	defer srv.Close()
	if m, _ := callTool(t, base, "t", `{}`, ""); m.Error != nil {
		t.Fatalf("upstream back: %+v", m)
	}
	if h := health(); h != 200 {
		t.Fatalf("readyz once the upstream answers: %d", h)
	}
}

func (m *rpcMsg) Data() json.RawMessage {
	if m.Error == nil {
		return nil
	}
	return m.Error.Data
}

// confirmUpstream asks to confirm, then counts each final call it gets.
func confirmUpstream(t testing.TB, finals *atomic.Int64) *httptest.Server {
	return rpcServer(t, func(w http.ResponseWriter, body []byte) {
		switch {
		case isToolsList(body):
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[]}}`)
		case bytes.Contains(body, []byte(`"requestState":"step=1"`)):
			n := finals.Add(1)
			time.Sleep(20 * time.Millisecond) // a side effect that takes a while
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"content":[{"type":"text","text":"done `+fmt.Sprint(n)+`"}]}}`)
		default:
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}},"requestState":"step=1"}}`)
		}
	})
}

func sealedState(t testing.TB, m *rpcMsg) string {
	t.Helper()
	var r struct {
		RequestState string `json:"requestState"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil || !strings.HasPrefix(r.RequestState, "v4.local.") {
		t.Fatalf("no sealed state: %s %+v", m.Result, m.Error)
	}
	return r.RequestState
}

func TestTwoProxiesOneRedisLedger(t *testing.T) {
	testenv.Require(t, "redis")
	ctx := context.Background()
	var p [8]byte
	_, _ = rand.Read(p[:])
	sep := "?"
	if strings.Contains(testenv.RedisURL(), "?") {
		sep = "&"
	}
	setting := testenv.RedisURL() + sep + "prefix=mrtr-proxy-test-" + hex.EncodeToString(p[:]) + ":"
	led1, err := ledger.Open(ctx, setting)
	if err != nil {
		t.Fatal(err)
	}
	defer led1.Close()
	led2, err := ledger.Open(ctx, setting)
	if err != nil {
		t.Fatal(err)
	}
	defer led2.Close()
	var finals atomic.Int64
	up := confirmUpstream(t, &finals)
	// Two proxies, as two processes would be: their own guards and
	// ledger clients, the same keys, audience and Redis.
	base1, _ := newProxy(t, newGuard(t, host.WithLedger(led1), host.WithLedgerWait(10*time.Second)), httpUpstream(t, up.URL))
	base2, _ := newProxy(t, newGuard(t, host.WithLedger(led2), host.WithLedgerWait(10*time.Second)), httpUpstream(t, up.URL))

	first, _ := callTool(t, base1, "act", `{"n":1}`, "")
	st := sealedState(t, first)
	retry := `,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":"` + st + `"`
	var wg sync.WaitGroup
	results := make([]string, 100)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			base := base1
			if i%2 == 1 {
				base = base2
			}
			m, _ := callTool(t, base, "act", `{"n":1}`, retry)
			if m.Error != nil {
				results[i] = "error: " + m.Error.Message
				return
			}
			results[i] = string(m.Result)
		}(i)
	}
	wg.Wait()
	if n := finals.Load(); n != 1 {
		t.Fatalf("the upstream got the final round %d times, want 1", n)
	}
	for i, r := range results {
		if !strings.Contains(r, "done 1") {
			t.Fatalf("replay %d got %s", i, r)
		}
	}
}

// TestTasksRefused: a tasks/* request (the tasks extension asks and takes
// answers around the guard) gets -32601 naming the extension, and never
// reaches the upstream; the next call goes through.
func TestTasksRefused(t *testing.T) {
	var seen atomic.Int64
	up := rpcServer(t, func(w http.ResponseWriter, body []byte) {
		if isToolsList(body) {
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[],"cacheScope":"public","ttlMs":60000}}`)
			return
		}
		if bytes.Contains(body, []byte(`"tasks/`)) {
			seen.Add(1)
		}
		writeJSON(w, okResult(body))
	})
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, up.URL))
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":{"taskId":"t1","inputResponses":{"a":{"action":"accept","content":{"x":"y"}}},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var m rpcMsg
		err = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if err != nil || m.Error == nil || m.Error.Code != -32601 || string(m.ID) != "7" || !strings.Contains(m.Error.Message, "tasks extension") {
			t.Fatalf("%s: HTTP %d, %+v (%v): want -32601 naming the tasks extension, with id 7", method, resp.StatusCode, m.Error, err)
		}
	}
	if n := seen.Load(); n != 0 {
		t.Fatalf("the upstream saw %d tasks requests", n)
	}
	if m, _ := callTool(t, base, "any", `{}`, ""); m.Error != nil {
		t.Fatalf("the next call failed: %+v", m.Error)
	}
}

// TestSubscriptionOutlivesTheTimeout: a subscriptions/listen stream stays
// open past --upstream-timeout and relays what arrives later, while a
// tools/call that slow still times out.
func TestSubscriptionOutlivesTheTimeout(t *testing.T) {
	up := rpcServer(t, func(w http.ResponseWriter, body []byte) {
		if isToolsList(body) {
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[],"cacheScope":"public","ttlMs":60000}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		note := func(n int) {
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":%s,\"n\":%d}}}\n\n", idOf(body), n)
			f.Flush()
		}
		note(1)
		time.Sleep(900 * time.Millisecond) // past the 300 ms timeout
		note(2)
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{}}`)
		f.Flush()
	})
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, up.URL, func(o *upstream.HTTPOptions) { o.Timeout = 300 * time.Millisecond }))

	body := `{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`"n":1`, `"n":2`, `"id":5,"result":{"resultType":"complete"}`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Fatalf("the subscription stream lacks %s (HTTP %d):\n%s", want, resp.StatusCode, b)
		}
	}

	m, _ := callTool(t, base, "slow", `{}`, "")
	if m.Error == nil || !strings.Contains(m.Error.Message, "in time") {
		t.Fatalf("a tools/call that slow: %+v, want the upstream timeout", m.Error)
	}
}

// TestUpstreamStateEchoedExactly: the proxy is the upstream's client, and
// a client echoes requestState exactly: "" comes back as "", and a round
// without one is retried without one.
func TestUpstreamStateEchoedExactly(t *testing.T) {
	for _, c := range []struct{ name, state, want string }{
		{"empty", `,"requestState":""`, `"requestState":""`},
		{"none", ``, ``},
		{"null", `,"requestState":null`, ``},
	} {
		t.Run(c.name, func(t *testing.T) {
			var retried atomic.Value
			up := rpcServer(t, func(w http.ResponseWriter, body []byte) {
				switch {
				case isToolsList(body):
					writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[],"ttlMs":60000}}`)
				case bytes.Contains(body, []byte(`"inputResponses"`)):
					retried.Store(string(body))
					writeJSON(w, okResult(body))
				default:
					writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Book it?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}}`+c.state+`}}`)
				}
			})
			base, _ := newProxy(t, newGuard(t), httpUpstream(t, up.URL))
			m, _ := callTool(t, base, "book", `{}`, "")
			var r struct {
				RequestState string `json:"requestState"`
			}
			if m.Error != nil || json.Unmarshal(m.Result, &r) != nil || !strings.HasPrefix(r.RequestState, "v4.local.") {
				t.Fatalf("first call: %+v %s", m.Error, m.Result)
			}
			st, _ := json.Marshal(r.RequestState)
			if m, _ = callTool(t, base, "book", `{}`, `,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":`+string(st)); m.Error != nil {
				t.Fatalf("retry: %+v", m.Error)
			}
			body, _ := retried.Load().(string)
			if body == "" {
				t.Fatal("the retry never reached the upstream")
			}
			got := strings.Contains(body, `"requestState"`)
			if c.want == "" && got || c.want != "" && !strings.Contains(body, c.want) {
				t.Fatalf("upstream state %q: the upstream got %s", c.state, body)
			}
		})
	}
}

// TestPolicySeesWhatTheClientSees: an upstream cannot show the policy one
// request and the client another. Its request carries "method" and, in
// another case, "METHOD" and "PARAMS": a reader that matches names in any
// case (encoding/json) takes it for roots/list, which this policy allows;
// the core reads the form asking for a phone number, which it does not.
// The core alone reads the upstream's requests, for the policy too.
func TestPolicySeesWhatTheClientSees(t *testing.T) {
	ctx := context.Background()
	raw, err := os.ReadFile(filepath.Join("..", "..", "policies", "data", "demo.json"))
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	if err := json.Unmarshal(raw, &data); err != nil {
		t.Fatal(err)
	}
	data["tools"].(map[string]any)["book_demo_call"].(map[string]any)["kinds"] = []string{"form", "roots"}
	raw, _ = json.Marshal(data)
	dataFile := filepath.Join(t.TempDir(), "data.json")
	if err := os.WriteFile(dataFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Default(ctx, policy.WithDataFile(dataFile))
	if err != nil {
		t.Fatal(err)
	}
	phone := `"params":{"message":"Your number?","requestedSchema":{"type":"object","properties":{"phone":{"type":"string","title":"Phone number"}}}}`
	for _, req := range []string{
		`{"method":"elicitation/create",` + phone + `,"METHOD":"roots/list","PARAMS":null}`,
		`{"METHOD":"roots/list","method":"elicitation/create",` + phone + `}`,
		`{"method":"elicitation/create",` + phone + `}`,
	} {
		up := rpcServer(t, func(w http.ResponseWriter, body []byte) {
			if isToolsList(body) {
				writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[],"ttlMs":60000}}`)
				return
			}
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"resultType":"input_required","inputRequests":{"contact":`+req+`},"requestState":"s"}}`)
		})
		base, _ := newProxy(t, newGuard(t, host.WithPolicy(pol)), httpUpstream(t, up.URL))
		m, _ := callTool(t, base, "book_demo_call", `{}`, "")
		if m.Error != nil || !bytes.Contains(m.Result, []byte(`"isError":true`)) || !bytes.Contains(m.Result, []byte("policy.field_not_allowed")) ||
			!bytes.Contains(m.Result, []byte(`phone`)) || bytes.Contains(m.Result, []byte("requestState")) {
			t.Errorf("%s\nthe client got %s %+v: want the policy's refusal of contact.phone", req, m.Result, m.Error)
		}
	}
}

// TestCaseVariantMembersNeverReachTheUpstream: many Go MCP servers decode
// with encoding/json, which matches member names in any case. A client's
// "REQUESTSTATE" (a forged upstream state on a first call) or "NAME"
// (another tool than the one the checks and the state are bound to)
// would reach such a server past every check; the proxy refuses them.
func TestCaseVariantMembersNeverReachTheUpstream(t *testing.T) {
	var calls atomic.Int64
	var seen atomic.Value
	up := rpcServer(t, func(w http.ResponseWriter, body []byte) {
		if isToolsList(body) {
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[],"ttlMs":60000}}`)
			return
		}
		calls.Add(1)
		var m struct {
			Params struct {
				Name         string  `json:"name"`
				RequestState *string `json:"requestState"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &m) // as such a server reads it
		if m.Params.RequestState != nil {
			seen.Store(*m.Params.RequestState)
		}
		writeJSON(w, okResult(body))
	})
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, up.URL))
	for _, extra := range []string{
		`,"REQUESTSTATE":"round=2;name=Mallory"`,
		`,"reque\u017ftState":"round=2;name=Mallory"`,
		`,"NAME":"delete_account"`,
		`,"InputResponses":{"confirm":{"action":"accept","content":{"ok":"yes"}}}`,
	} {
		m, status := callTool(t, base, "list_bookings", `{}`, extra)
		if m.Error == nil || m.Error.Code != -32602 || status != http.StatusBadRequest {
			t.Errorf("%s: HTTP %d, %+v %s: want -32602", extra, status, m.Error, m.Result)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the upstream got %d of them (state %v)", n, seen.Load())
	}
	if m, _ := callTool(t, base, "list_bookings", `{}`, ""); m.Error != nil || calls.Load() != 1 {
		t.Fatalf("a plain call after them: %+v", m.Error)
	}
}
