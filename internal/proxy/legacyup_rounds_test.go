package proxy

// Regression tests for the legacy-era (2025-11-25) paths: an upstream of
// that era that also answers input_required, a call whose client left, a
// server's ping in the middle of a call, client notifications and
// Mcp-Param-* headers for a legacy client.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

// passwordForm is an InputRequiredResult whose form asks for a password.
const passwordForm = `{"resultType":"input_required","inputRequests":{"login":{"method":"elicitation/create","params":{"message":"Sign in","requestedSchema":{"type":"object","properties":{"password":{"type":"string"}}}}}},"requestState":"x"}`

// nameForm is an InputRequiredResult whose form the default policy allows.
const nameForm = `{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}},"requestState":"x"}`

// answeringLegacyUpstream is a 2025-11-25 Streamable HTTP upstream (it
// refuses server/discover) that answers every tools/call with answer(the
// request body) as its result.
func answeringLegacyUpstream(t *testing.T, answer func(body []byte) string) upstream.Upstream {
	t.Helper()
	s := rpcServer(t, func(w http.ResponseWriter, b []byte) {
		switch {
		case bytes.Contains(b, []byte(`"server/discover"`)):
			w.WriteHeader(http.StatusBadRequest)
		case bytes.Contains(b, []byte(`"initialize"`)):
			w.Header().Set("Mcp-Session-Id", "s1")
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(b)+`,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"x","version":"1"}}}`)
		case !bytes.Contains(b, []byte(`"id"`)):
			w.WriteHeader(http.StatusAccepted)
		case bytes.Contains(b, []byte(`"tools/list"`)):
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(b)+`,"result":{"tools":[{"name":"login","inputSchema":{"type":"object"}}]}}`)
		default:
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(b)+`,"result":`+answer(b)+`}`)
		}
	})
	up, err := upstream.DetectHTTP(context.Background(), httpUpstream(t, s.URL), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := up.(*upstream.LegacyHTTP); !ok {
		t.Fatalf("not a legacy upstream: %T", up)
	}
	return up
}

// TestLegacyUpstreamInputRequiredResultIsPoliced: a 2025-era upstream
// whose final answer is itself input_required (a server of both eras) has
// its form linted like any round: a password form never reaches the
// client, which gets a tool error naming the field.
func TestLegacyUpstreamInputRequiredResultIsPoliced(t *testing.T) {
	base, _ := newProxy(t, newGuard(t), answeringLegacyUpstream(t, func([]byte) string { return passwordForm }))
	m, _ := callTool(t, base, "login", `{}`, "")
	if bytes.Contains(m.Result, []byte("inputRequests")) || !bytes.Contains(m.Result, []byte(`"isError":true`)) || !bytes.Contains(m.Result, []byte("password")) {
		t.Fatalf("want a tool error naming the password field, got %+v %s", m.Error, m.Result)
	}
}

// TestLegacyClientNotAskedLegacyUpstreamsPasswordForm: nor is a 2025-era
// client through the proxy asked that form on its session.
func TestLegacyClientNotAskedLegacyUpstreamsPasswordForm(t *testing.T) {
	base, _ := newProxy(t, newGuard(t), answeringLegacyUpstream(t, func([]byte) string { return passwordForm }))
	var mu sync.Mutex
	asked := 0
	c := mcp.NewClient(&mcp.Implementation{Name: "legacy-client", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked++
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"password": "not-a-real-one"}}, nil
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "login", Arguments: map[string]any{}})
	mu.Lock()
	defer mu.Unlock()
	if asked > 0 {
		t.Fatalf("the 2025 client was asked the upstream's password form %d time(s)", asked)
	}
	if err != nil || !res.IsError {
		t.Fatalf("want a tool error, got %v %+v", err, res)
	}
}

// TestLegacyUpstreamInputRequiredResultIsSealed: an allowed form of such
// an upstream reaches the client sealed (never with the upstream's own
// state), and the retry reaches the upstream with that state put back.
func TestLegacyUpstreamInputRequiredResultIsSealed(t *testing.T) {
	var mu sync.Mutex
	var retries []string
	up := answeringLegacyUpstream(t, func(b []byte) string {
		var r struct {
			Params struct {
				RequestState   *string         `json:"requestState"`
				InputResponses json.RawMessage `json:"inputResponses"`
			} `json:"params"`
		}
		_ = json.Unmarshal(b, &r)
		if r.Params.RequestState == nil {
			return nameForm
		}
		mu.Lock()
		retries = append(retries, *r.Params.RequestState)
		mu.Unlock()
		return `{"content":[{"type":"text","text":"hello"}]}`
	})
	p, err := New(Config{Guard: newGuard(t), Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	r := handleTool(t, p, "alice", "login", `{"elicitation":{}}`, "")
	var ir struct {
		ResultType   string `json:"resultType"`
		RequestState string `json:"requestState"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &ir) != nil || ir.ResultType != "input_required" {
		t.Fatalf("want a round: %+v %s", r.Error, r.Result)
	}
	if ir.RequestState == "x" || ir.RequestState == "" {
		t.Fatalf("the upstream's own state reached the client: %s", r.Result)
	}
	sb, _ := json.Marshal(ir.RequestState)
	r = handleTool(t, p, "alice", "login", `{"elicitation":{}}`, `,"requestState":`+string(sb)+`,"inputResponses":{"who":{"action":"accept","content":{"name":"Ada"}}}`)
	if r.Error != nil || !strings.Contains(string(r.Result), "hello") {
		t.Fatalf("retry: %+v %s", r.Error, r.Result)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(retries) != 1 || retries[0] != "x" {
		t.Fatalf("the upstream saw retries with states %q, want [x]", retries)
	}
}

// scriptedLegacy is a 2025-era upstream (its Discovery says legacy) whose
// calls run call; what the proxy sends it goes to sent.
type scriptedLegacy struct {
	call func(ctx context.Context, msg []byte, on func([]byte) error) ([]byte, error)
	sent chan []byte
}

func (*scriptedLegacy) Discovery() (json.RawMessage, bool) {
	return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"1"}}`), true
}
func (u *scriptedLegacy) Call(ctx context.Context, msg []byte, _ http.Header, on func([]byte) error) ([]byte, error) {
	return u.call(ctx, msg, on)
}
func (u *scriptedLegacy) Send(_ context.Context, msg []byte, _ http.Header) error {
	if u.sent != nil {
		u.sent <- bytes.Clone(msg)
	}
	return nil
}
func (*scriptedLegacy) ID() string    { return "scripted-legacy" }
func (*scriptedLegacy) Health() error { return nil }
func (*scriptedLegacy) Close() error  { return nil }

func toolName(msg []byte) string {
	var r struct {
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	_ = json.Unmarshal(msg, &r)
	return r.Params.Name
}

// TestLegacyUpstreamStateCannotPoseAsPendingRound: a requestState of the
// upstream's own that takes the form of the proxy's pending-request
// reference (here naming another call's open request) is refused, so
// that no retry can deliver its answers to that request.
func TestLegacyUpstreamStateCannotPoseAsPendingRound(t *testing.T) {
	var mu sync.Mutex
	var forged string
	up := &scriptedLegacy{sent: make(chan []byte, 8)}
	up.call = func(ctx context.Context, msg []byte, on func([]byte) error) ([]byte, error) {
		if toolName(msg) == "ask" {
			_ = on([]byte(`{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}`))
			<-ctx.Done()
			return nil, ctx.Err()
		}
		mu.Lock()
		defer mu.Unlock()
		sb, _ := json.Marshal(forged)
		return []byte(`{"jsonrpc":"2.0","id":` + idOf(msg) + `,"result":` + strings.Replace(nameForm, `"x"`, string(sb), 1) + `}`), nil
	}
	p, err := New(Config{Guard: newGuard(t), Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.pending.m.Range(func(_, v any) bool { v.(*legacyCall).cancel(); return true })
	})
	if r := handleTool(t, p, "alice", "ask", `{"elicitation":{}}`, ""); !strings.Contains(string(r.Result), "input_required") {
		t.Fatalf("want a round: %+v %s", r.Error, r.Result)
	}
	var key string
	p.pending.m.Range(func(k, _ any) bool { key = k.(string); return false })
	if key == "" {
		t.Fatal("no pending round")
	}
	for _, state := range []string{pendingPrefix + key, pendingPrefix + "0123"} {
		mu.Lock()
		forged = state
		mu.Unlock()
		r := handleTool(t, p, "alice", "hybrid", `{"elicitation":{}}`, "")
		if r.Error == nil || bytes.Contains(r.Result, []byte("inputRequests")) {
			t.Fatalf("an upstream state in the proxy's reserved form was passed on: %+v %s", r.Error, r.Result)
		}
	}
	if _, ok := p.pending.m.Load(key); !ok {
		t.Fatal("the other call's pending round was disturbed")
	}
}

func TestClaimsPendingState(t *testing.T) {
	for in, want := range map[string]bool{
		`{"result":{"requestState":"pending:k"}}`:                    true,
		`{"result":{"REQUESTSTATE":"pending:k"}}`:                    true,
		`{"result":{"reque\u017ftState":"\u0070ending:k"}}`:          true,
		`{"result":{"requestState":"x","requestState":"pending:k"}}`: true,
		`{"result":{"a":[{"requestState":"pending:k"}]}}`:            true,
		`{"result":{"requestState":"x","message":"pending:k"}}`:      false,
		`{"result":{"requestState":{"a":"pending:k"},"b":"c"}}`:      false,
		`{"result":{"inputRequests":["requestState","pending:k"]}}`:  false,
		`{"result":{"requestState":"not pending:k"}}`:                false,
		`{"result":{"requestState":"x"},"pending:k":"requestState"}`: false,
	} {
		if got := claimsPendingState([]byte(in)); got != want {
			t.Errorf("claimsPendingState(%s) = %v, want %v", in, got, want)
		}
	}
}

// cancelOnNotify is a client that leaves when the first notification
// reaches it.
type cancelOnNotify struct {
	finalSink
	cancel context.CancelFunc
}

func (s *cancelOnNotify) Notify([]byte) error { s.cancel(); return nil }

// TestLegacyCallEndsWhenClientLeaves: when the client's request ends
// while a legacy upstream's call is still sending (more than the events
// buffer holds), the call is cancelled and nothing it sends blocks, so the
// upstream's Call returns (a per-principal child's slot is released).
func TestLegacyCallEndsWhenClientLeaves(t *testing.T) {
	returned := make(chan struct{})
	up := &scriptedLegacy{call: func(ctx context.Context, msg []byte, on func([]byte) error) ([]byte, error) {
		defer close(returned)
		for range 40 {
			_ = on([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"tick"}}`))
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	p, err := New(Config{Guard: newGuard(t), Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &cancelOnNotify{cancel: cancel}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	m, jerr := mcphttp.ParseMessage(body)
	if jerr != nil {
		t.Fatal(jerr)
	}
	p.Handle(ctx, m, body, http.Header{}, "alice", s)
	if !bytes.Contains(s.final, []byte("the request ended")) {
		t.Fatalf("answer: %s", s.final)
	}
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("the upstream call is still blocked 30 s after its client left")
	}
}

// sessionRecorder is a 2025-11-25 Streamable HTTP upstream that opens a
// new session (s1, s2, …) on each initialize and records the session each
// tools/call and each client notification arrives on.
type sessionRecorder struct {
	mu       sync.Mutex
	sessions int
	calls    []string // session ids of tools/call
	notes    []string // session ids of notifications/cancelled
}

func (r *sessionRecorder) upstream(t *testing.T) upstream.Upstream {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		sid := req.Header.Get("Mcp-Session-Id")
		r.mu.Lock()
		defer r.mu.Unlock()
		switch {
		case bytes.Contains(b, []byte(`"server/discover"`)):
			w.WriteHeader(http.StatusBadRequest)
		case bytes.Contains(b, []byte(`"initialize"`)):
			r.sessions++
			w.Header().Set("Mcp-Session-Id", "s"+strconv.Itoa(r.sessions))
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(b)+`,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"x","version":"1"}}}`)
		case bytes.Contains(b, []byte(`"notifications/cancelled"`)):
			r.notes = append(r.notes, sid)
			w.WriteHeader(http.StatusAccepted)
		case !bytes.Contains(b, []byte(`"id"`)):
			w.WriteHeader(http.StatusAccepted)
		case bytes.Contains(b, []byte(`"tools/list"`)):
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(b)+`,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}`)
		default:
			r.calls = append(r.calls, sid)
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(b)+`,"result":{"content":[{"type":"text","text":"ok"}]}}`)
		}
	}))
	t.Cleanup(s.Close)
	up, err := upstream.DetectHTTP(context.Background(), httpUpstream(t, s.URL), false)
	if err != nil {
		t.Fatal(err)
	}
	return up
}

// check: one call and one notification, on the same upstream session.
func (r *sessionRecorder) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) != 1 || len(r.notes) != 1 || r.calls[0] != r.notes[0] {
		t.Fatalf("calls on sessions %q, notifications on %q: want both on the caller's one", r.calls, r.notes)
	}
}

const cancelledNote = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"gone"}}`

// TestClientNotificationReachesPrincipalsLegacySession: a client's
// notification goes to the legacy upstream on its principal's session,
// the one its calls use, not on the proxy's own.
func TestClientNotificationReachesPrincipalsLegacySession(t *testing.T) {
	rec := &sessionRecorder{}
	base, _ := newProxy(t, newGuard(t), rec.upstream(t))
	if m, _ := callTool(t, base, "t", `{}`, ""); m.Error != nil {
		t.Fatalf("call: %+v", m.Error)
	}
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(cancelledNote))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "notifications/cancelled")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("HTTP %d", resp.StatusCode)
	}
	rec.check(t)
}

// TestStdioClientNotificationReachesLegacySession: the same for the
// proxy's stdio client (the anonymous principal).
func TestStdioClientNotificationReachesLegacySession(t *testing.T) {
	rec := &sessionRecorder{}
	p, err := New(Config{Guard: newGuard(t), Upstream: rec.upstream(t)})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- p.ServeStdio(context.Background(), inR, outW); outW.Close() }()
	lines := bufio.NewScanner(outR)
	_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`+"\n")
	if !lines.Scan() || !strings.Contains(lines.Text(), `"ok"`) {
		t.Fatalf("call: %s", lines.Text())
	}
	_, _ = io.WriteString(inW, cancelledNote+"\n")
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rec.check(t)
}

// TestLegacyClientCallsParamHeaderTool: a 2025-11-25 client calls a tool
// whose argument a 2026-07-28 upstream (the Go SDK's, which checks them)
// wants also as an Mcp-Param-* header: the proxy sends the headers such a
// client would, from the arguments; an argument also spelt in another
// case is refused, as it is for a 2026-07-28 client.
func TestLegacyClientCallsParamHeaderTool(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	var mu sync.Mutex
	var got []string
	up.AddTool(&mcp.Tool{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"opts":{"type":"object","properties":{"fast":{"type":"boolean","x-mcp-header":"Fast"}}}}}`)},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			got = append(got, r.Extra.Header.Get("Mcp-Param-Region")+"|"+r.Extra.Header.Get("Mcp-Param-N")+"|"+r.Extra.Header.Get("Mcp-Param-Fast"))
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil
		})
	ups := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(ups.Close)
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, ups.URL))
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "legacy-client", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, args := range []map[string]any{
		{"region": "eu", "n": 3, "opts": map[string]any{"fast": true}},
		{"region": " zürich "},
		{},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "lookup", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%v: %v %+v", args, err, res)
		}
	}
	mu.Lock()
	want := []string{"eu|3|true", "=?base64?IHrDvHJpY2gg?=||", "||"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the upstream saw headers %q, want %q", got, want)
	}
	mu.Unlock()
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "lookup", Arguments: map[string]any{"region": "eu", "REGION": "us"}})
	if err == nil || !strings.Contains(err.Error(), "differ only in case") {
		t.Fatalf("case variants: %v", err)
	}
}

// TestLegacyUpstreamPingAnswered: a 2025-era upstream's ping in the middle
// of a call is answered with an empty result (not refused), and the call
// goes on.
func TestLegacyUpstreamPingAnswered(t *testing.T) {
	up := &scriptedLegacy{sent: make(chan []byte, 4)}
	up.call = func(ctx context.Context, msg []byte, on func([]byte) error) ([]byte, error) {
		_ = on([]byte(`{"jsonrpc":"2.0","id":"ping-1","method":"ping"}`))
		select {
		case reply := <-up.sent:
			var r struct {
				ID     string          `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal(reply, &r) != nil || r.ID != "ping-1" || string(r.Result) != "{}" {
				return []byte(`{"jsonrpc":"2.0","id":` + idOf(msg) + `,"result":{"content":[{"type":"text","text":"ping answered with ` + strconv.Quote(string(reply))[1:] + `}]}}`), nil
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return []byte(`{"jsonrpc":"2.0","id":` + idOf(msg) + `,"result":{"content":[{"type":"text","text":"pong"}]}}`), nil
	}
	p, err := New(Config{Guard: newGuard(t), Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	if r := handleTool(t, p, "alice", "t", `{}`, ""); r.Error != nil || !strings.Contains(string(r.Result), "pong") {
		t.Fatalf("%+v %s", r.Error, r.Result)
	}
}

// TestLegacyUpstreamFurtherRoundChecked: the retry of a 2025-era
// server's own input_required round is read as any answer of that
// server: a further round whose requestState takes the proxy's pending:
// prefix is refused there too, not sealed.
func TestLegacyUpstreamFurtherRoundChecked(t *testing.T) {
	up := answeringLegacyUpstream(t, func(b []byte) string {
		if !bytes.Contains(b, []byte(`"requestState"`)) {
			return nameForm
		}
		return `{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create","params":{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}},"requestState":"pending:forged"}`
	})
	p, err := New(Config{Guard: newGuard(t), Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	r := handleTool(t, p, "alice", "login", `{"elicitation":{}}`, "")
	var ir struct{ RequestState string }
	if r.Error != nil || json.Unmarshal(r.Result, &ir) != nil || ir.RequestState == "" {
		t.Fatalf("want a round: %+v %s", r.Error, r.Result)
	}
	sb, _ := json.Marshal(ir.RequestState)
	r = handleTool(t, p, "alice", "login", `{"elicitation":{}}`, `,"requestState":`+string(sb)+`,"inputResponses":{"who":{"action":"accept","content":{"name":"Ada"}}}`)
	if r.Error == nil || !strings.Contains(r.Error.Message, "reserves") {
		t.Fatalf("a further round with a pending: state: want it refused, got %+v %s", r.Error, r.Result)
	}
}
