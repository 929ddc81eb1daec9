package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/telemetry/otlptest"
)

var (
	hostileOnce sync.Once
	hostileBin  string
	hostileErr  error
)

// hostileChild builds internal/upstream/stdiotest/hostile, a stdio MCP
// server that misbehaves on request, once per test run.
func hostileChild(t *testing.T) string {
	t.Helper()
	hostileOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mrtr-hostile-")
		if err != nil {
			hostileErr = err
			return
		}
		hostileBin = filepath.Join(dir, "hostile")
		out, err := exec.Command("go", "build", "-o", hostileBin, "../../internal/upstream/stdiotest/hostile").CombinedOutput()
		if err != nil {
			hostileErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if hostileErr != nil {
		t.Fatal(hostileErr)
	}
	return hostileBin
}

// startProxy runs `mrtr-wasm proxy ARGS` in this process until the test
// ends, and returns its base URL and log.
func startProxy(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan int, 1)
	args = append([]string{"--addr", "127.0.0.1:0", "--wasm-cache", sharedCache, "--log-format", "text"}, args...)
	go func() { done <- proxyMain(ctx, args, nil, io.Discard, logs, func(a string) { addr <- a }) }()
	select {
	case a := <-addr:
		t.Cleanup(func() {
			cancel()
			select {
			case code := <-done:
				if code != 0 {
					t.Errorf("proxy exited with %d:\n%s", code, logs)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("proxy did not shut down")
			}
		})
		return "http://" + a, logs
	case code := <-done:
		cancel()
		t.Fatalf("proxy exited with %d:\n%s", code, logs)
	case <-time.After(2 * time.Minute):
		cancel()
		t.Fatalf("proxy did not start:\n%s", logs)
	}
	return "", nil
}

type proxied struct {
	Result struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError    bool                       `json:"isError"`
		Structured map[string]json.RawMessage `json:"structuredContent"`
	} `json:"result"`
	Error *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func proxyCall(t *testing.T, base, tool, args string, h http.Header) proxied {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}},"name":"` + tool + `","arguments":` + args + `}}`
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool} {
		req.Header.Set(k, v)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		lines := strings.Split(string(b), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if d, ok := strings.CutPrefix(lines[i], "data: "); ok {
				b = []byte(d)
				break
			}
		}
	}
	var r proxied
	if err := json.Unmarshal(b, &r); err != nil || !strings.Contains(string(b), `"id":"c-1"`) {
		t.Fatalf("%s: not the answer to the call (HTTP %d): %s", tool, resp.StatusCode, b)
	}
	return r
}

// A hostile stdio child behind `mrtr-wasm proxy -- CMD`: each misdeed is
// a clear error for that call, and the next call is served.
func TestProxyStdioHostileChild(t *testing.T) {
	key := host.GenerateKey()
	t.Setenv("MRTR_KEYS", key)
	bin := hostileChild(t)
	base, logs := startProxy(t, "--upstream-timeout", "2s", "--upstream-max-body", "65536",
		"--upstream-env", "MRTR_TEST_CHILD=ok", "--", bin)
	served := func(after string) {
		t.Helper()
		if r := proxyCall(t, base, "echo", `{}`, nil); r.Error != nil || r.Result.IsError {
			t.Fatalf("after %s, the next call was not served: %+v", after, r)
		}
	}
	served("start")
	for _, c := range []struct{ tool, args, code string }{
		{"garbage", `{}`, "mrtr.upstream.bad_response"},
		{"sleep", `{"ms":5000}`, "mrtr.upstream.timeout"},
		{"big", `{"bytes":200000}`, "mrtr.upstream.too_large"},
		{"die", `{}`, "mrtr.upstream.unavailable"},
	} {
		t0 := time.Now()
		r := proxyCall(t, base, c.tool, c.args, nil)
		if r.Error == nil || r.Error.Code != -32603 || !strings.Contains(string(r.Error.Data), `"code":"`+c.code+`"`) ||
			!strings.Contains(string(r.Error.Data), `"retryable":true`) || !strings.Contains(r.Error.Message, "retry") {
			t.Errorf("%s: want -32603 %s, got %+v", c.tool, c.code, r)
		}
		if d := time.Since(t0); d > 4*time.Second {
			t.Errorf("%s: the error took %s", c.tool, d)
		}
		served(c.tool)
	}

	// A form that asks for a password never reaches the client.
	r := proxyCall(t, base, "password", `{}`, nil)
	if r.Error != nil || !r.Result.IsError || !strings.Contains(r.Result.Content[0].Text, "login.password") || !strings.Contains(r.Result.Content[0].Text, "URL mode") {
		t.Errorf("password form: %+v", r)
	}
	// A server-to-client request is refused, steering its author to
	// input_required; the call itself completes.
	r = proxyCall(t, base, "ask", `{}`, nil)
	if r.Error != nil || len(r.Result.Content) == 0 || !strings.Contains(r.Result.Content[0].Text, "input_required") {
		t.Errorf("server-to-client request: %+v", r)
	}
	served("ask")

	// The child's environment: what was given, never the proxy's keys.
	r = proxyCall(t, base, "env", `{}`, nil)
	if env := string(r.Result.Structured["env"]); env != `["MRTR_TEST_CHILD=ok"]` {
		t.Errorf("child environment %s", env)
	}
	l := logs.String()
	for _, want := range []string{"child: dying mid-call", "upstream process restarted", "refused a server-to-client request", "stdio servers must log to stderr"} {
		if !strings.Contains(l, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	if os.Getenv("MRTR_KEYS") != "" {
		t.Error("MRTR_KEYS is still in the proxy's environment once read")
	}
	if strings.Contains(l, key) {
		t.Error("the key reached the log")
	}
}

// The trace goes client → proxy server span → client span → the child,
// which gets the client span's traceparent in _meta.
func TestProxyStdioTraceReachesChild(t *testing.T) {
	rcv := otlptest.Start(t)
	bin := hostileChild(t)
	base, _ := startProxy(t, "--upstream-env", "MRTR_TEST_CHILD=ok", "--", bin)
	const trace, caller = "6bf92f3577b34da6a3ce929d0e0e4736", "20f067aa0ba902b7"
	r := proxyCall(t, base, "echo", `{}`, http.Header{"Traceparent": {"00-" + trace + "-" + caller + "-01"}})
	var meta map[string]any
	_ = json.Unmarshal(r.Result.Structured["meta"], &meta)
	tp, _ := meta["traceparent"].(string)
	spans := rcv.WaitFor(t, "tools/call echo", 10*time.Second)
	var server, client otlptest.Span
	deadline := time.Now().Add(10 * time.Second)
	for client.SpanID == "" || server.SpanID == "" {
		for _, s := range spans {
			if s.Name == "tools/call echo" && s.Kind.String() == "SPAN_KIND_SERVER" {
				server = s
			}
			if s.Name == "tools/call echo" && s.Kind.String() == "SPAN_KIND_CLIENT" {
				client = s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("spans %v", otlptest.Names(spans))
		}
		time.Sleep(20 * time.Millisecond)
		spans = rcv.Spans(t)
	}
	if server.TraceID != trace || server.ParentID != caller || client.ParentID != server.SpanID || server.Service != "mrtr-wasm-proxy" {
		t.Errorf("server %+v\nclient %+v", server, client)
	}
	if tp != "00-"+trace+"-"+client.SpanID+"-01" {
		t.Errorf("the child got traceparent %q, want the client span %s", tp, client.SpanID)
	}
}

// startStdioProxy runs `mrtr-wasm proxy --stdio ARGS` in this process
// until the test ends: the client writes to in and reads lines from out.
func startStdioProxy(t *testing.T, args ...string) (in io.Writer, out *bufio.Scanner, logs *syncBuffer) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	logs = &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- proxyMain(ctx, append([]string{"--stdio", "--addr", "127.0.0.1:0", "--wasm-cache", sharedCache}, args...), inR, outW, logs, nil)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("proxy --stdio did not stop")
		}
	})
	return inW, bufio.NewScanner(outR), logs
}

// `mrtr-wasm proxy --stdio -- CMD`: a local client speaks to the proxy on
// stdin/stdout, the proxy to its child on the child's.
func TestProxyStdioBothSides(t *testing.T) {
	inW, sc, logs := startStdioProxy(t, "--upstream-env", "MRTR_TEST_CHILD=ok", "--", hostileChild(t))
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	// server/discover is the proxy's, from the child's.
	if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{%s}}`+"\n", meta); err != nil {
		t.Fatal(err)
	}
	if !sc.Scan() {
		t.Fatalf("no answer to server/discover:\n%s", logs)
	}
	if d := sc.Text(); !strings.Contains(d, `"supportedVersions":["2026-07-28","2025-11-25","2025-06-18"]`) ||
		!strings.Contains(d, `"io.modelcontextprotocol/serverInfo":{"name":"child","version":"1"}`) || !strings.Contains(d, `"mrtr-wasm/proxy":{`) {
		t.Fatalf("server/discover: %s", d)
	}
	got := map[string]string{}
	// One at a time: a call in flight when the child dies fails too.
	for id, tool := range []string{"echo", "die", "echo"} {
		if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"name":%q,"arguments":{"x":1}}}`+"\n", id+1, meta, tool); err != nil {
			t.Fatal(err)
		}
		if !sc.Scan() {
			t.Fatalf("no answer to %s:\n%s", tool, logs)
		}
		got[fmt.Sprint(id+1)] = sc.Text()
	}
	if !strings.Contains(got["1"], `"arguments":{"x":1}`) || !strings.Contains(got["2"], "mrtr.upstream.unavailable") || !strings.Contains(got["3"], `"id":3`) || !strings.Contains(got["3"], `"arguments":{"x":1}`) {
		t.Fatalf("answers %q\nlog:\n%s", got, logs)
	}
}

// A child that keeps dying: the restarts stop at the cap and /readyz
// says not ready (503) from then on.
func TestProxyStdioCrashLoopReadyz(t *testing.T) {
	bin := hostileChild(t)
	counter := filepath.Join(t.TempDir(), "starts")
	base, logs := startProxy(t, "--upstream-env", "MRTR_TEST_CHILD=crashafter", "--upstream-env", "MRTR_TEST_COUNTER="+counter, "--", bin)
	health := func() (int, string) {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := health(); code != http.StatusOK {
		t.Fatalf("readyz before the crash: %d %s", code, body)
	}
	if r := proxyCall(t, base, "die", `{}`, nil); r.Error == nil {
		t.Fatalf("die: %+v", r)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := health()
		if code == http.StatusServiceUnavailable && strings.Contains(body, "mrtr.upstream.unavailable") && strings.Contains(logs.String(), "upstream crash loop: not restarting") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz %d %s\n%s", code, body, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := proxyCall(t, base, "echo", `{}`, nil); r.Error == nil || !strings.Contains(r.Error.Message, "restarts have stopped") {
		t.Fatalf("a call after the crash loop: %+v", r)
	}
}

// `proxy --stdio` takes both eras, as serve --stdio does: a 2025-11-25
// initialize gets a session (not -32602 for a missing _meta), and its
// tools/call reaches the child.
func TestProxyStdioLegacyClient(t *testing.T) {
	inW, sc, logs := startStdioProxy(t, "--upstream-env", "MRTR_TEST_CHILD=ok", "--", hostileChild(t))
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if !sc.Scan() {
		t.Fatalf("no answer to initialize:\n%s", logs)
	}
	if r := sc.Text(); !strings.Contains(r, `"protocolVersion":"2025-11-25"`) || strings.Contains(r, `"error"`) {
		t.Fatalf("initialize: %s", r)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"x":1}}}`)
	if !sc.Scan() {
		t.Fatalf("no answer to tools/call:\n%s", logs)
	}
	if r := sc.Text(); !strings.Contains(r, `"id":2`) || !strings.Contains(r, `"arguments":{"x":1}`) || strings.Contains(r, `"error"`) {
		t.Fatalf("tools/call on the session: %s", r)
	}
}
