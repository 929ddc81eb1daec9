package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/internal/identity"
	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

// askingUpstream is a 2025-11-25 Streamable HTTP server (the Go SDK) whose
// tool "ask" asks the client a form mid-call and waits for the answer;
// calls counts the calls that reached it, and each answer's action is
// sent on actions when that is not nil.
func askingUpstream(t *testing.T, calls *atomic.Int64, actions ...chan<- string) upstream.Upstream {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		calls.Add(1)
		res, err := r.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Your name?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)})
		text := "no answer"
		if err == nil {
			text = "answer: " + res.Action + " " + fmt.Sprint(res.Content["name"])
			for _, a := range actions {
				a <- res.Action
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	up, err := upstream.DetectHTTP(context.Background(), httpUpstream(t, ts.URL), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := up.(*upstream.LegacyHTTP); !ok {
		t.Fatalf("the upstream was not taken for a 2025-era one: %T", up)
	}
	return up
}

// metricValue reads one unlabelled sample from the proxy's /metrics (-1:
// absent).
func metricValue(t *testing.T, base, name string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// TestPendingRoundsCapped (finding 1): behind a 2025-era HTTP upstream
// whose tool asks and waits, one principal's 17th open round is refused
// before the upstream is called (-32000, HTTP 503 with Retry-After),
// another principal still gets rounds, the gauge shows what is held, and
// answering one round makes room again.
func TestPendingRoundsCapped(t *testing.T) {
	var calls atomic.Int64
	tokens, err := identity.NewTokens(map[string]string{aliceToken: "alice", bobToken: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	base, p := serveProxy(t, Config{Guard: newGuard(t), Upstream: askingUpstream(t, &calls), Auth: identity.NewTokenAuthenticator(tokens, nil)})
	t.Cleanup(p.Close) // answers the rounds still open, before the upstream stops
	call := func(tok, extra string) (*rpcMsg, *http.Response) {
		t.Helper()
		id := idSeq.Add(1)
		req := toolRequest(base, id, "ask", "{}", extra)
		req.Header.Set("Authorization", "Bearer "+tok)
		return doRPC(t, req, id)
	}
	var first string
	for i := range 16 {
		m, _ := call(aliceToken, "")
		state := inputRound(t, *m)
		if state == "" {
			t.Fatalf("alice's call %d: %+v %s", i, m.Error, m.Result)
		}
		if i == 0 {
			first = state
		}
	}
	if got := metricValue(t, base, "mrtr_proxy_pending_rounds"); got != 16 {
		t.Fatalf("mrtr_proxy_pending_rounds = %v, want 16", got)
	}
	m, resp := call(aliceToken, "")
	if m.Error == nil || m.Error.Code != -32000 || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("alice's 17th open round: HTTP %d Retry-After %q, %+v %s", resp.StatusCode, resp.Header.Get("Retry-After"), m.Error, m.Result)
	}
	if n := calls.Load(); n != 16 {
		t.Fatalf("the upstream got %d calls, want 16 (the refused one must not reach it)", n)
	}
	if m, _ := call(bobToken, ""); inputRound(t, *m) == "" {
		t.Fatalf("bob: %+v %s", m.Error, m.Result)
	}
	// Answering one of alice's rounds ends its call: room for another.
	sb, _ := json.Marshal(first)
	if m, _ := call(aliceToken, `,"requestState":`+string(sb)+`,"inputResponses":{"elicitation":{"action":"accept","content":{"name":"Ada"}}}`); !strings.Contains(string(m.Result), "answer: accept Ada") {
		t.Fatalf("alice's answer: %+v %s", m.Error, m.Result)
	}
	if m, _ := call(aliceToken, ""); inputRound(t, *m) == "" {
		t.Fatalf("alice after one round ended: %+v %s", m.Error, m.Result)
	}
}

// initSession sends a 2025-11-25 initialize as tok: the HTTP status and
// the session id.
func initSession(t *testing.T, base, tok string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
}

// sessionStatus is the HTTP status of a ping on session id.
func sessionStatus(t *testing.T, base, tok, id string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestLegacySessionsPerPrincipal (finding 6): with --max-sessions 20, alice
// opening 20 sessions no longer locks bob out: past her 16 each new one
// closes her least recently used, and bob gets his. Concurrent
// initializes never open more than --max-sessions.
func TestLegacySessionsPerPrincipal(t *testing.T) {
	var calls atomic.Int64
	tokens, err := identity.NewTokens(map[string]string{aliceToken: "alice", bobToken: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	up := askingUpstream(t, &calls)
	auth := identity.NewTokenAuthenticator(tokens, nil)
	base, _ := serveProxy(t, Config{Guard: newGuard(t), Upstream: up, Auth: auth, MaxSessions: 20})
	var ids []string
	for i := range 20 {
		status, id := initSession(t, base, aliceToken)
		if status != http.StatusOK || id == "" {
			t.Fatalf("alice's initialize %d: HTTP %d", i, status)
		}
		ids = append(ids, id)
	}
	if status, _ := initSession(t, base, bobToken); status != http.StatusOK {
		t.Fatalf("bob's initialize after alice's 20: HTTP %d", status)
	}
	if got := metricValue(t, base, "mrtr_legacy_sessions"); got != 17 {
		t.Fatalf("mrtr_legacy_sessions = %v, want 17 (alice's 16, bob's 1)", got)
	}
	if got := metricValue(t, base, "mrtr_legacy_sessions_evicted_total"); got != 4 {
		t.Fatalf("mrtr_legacy_sessions_evicted_total = %v, want 4", got)
	}
	if s := sessionStatus(t, base, aliceToken, ids[0]); s != http.StatusNotFound {
		t.Fatalf("alice's least recently used session: HTTP %d, want 404 (closed)", s)
	}
	if s := sessionStatus(t, base, aliceToken, ids[19]); s != http.StatusOK {
		t.Fatalf("alice's newest session: HTTP %d", s)
	}

	// The count and the creation are one step: 40 concurrent initializes
	// against a cap of 5 open at most 5 (a session that is being opened
	// may count twice for a moment, so fewer is allowed).
	base, _ = serveProxy(t, Config{Guard: newGuard(t), Upstream: up, Auth: auth, MaxSessions: 5})
	var opened atomic.Int64
	done := make(chan struct{})
	for i := range 40 {
		go func() {
			defer func() { done <- struct{}{} }()
			tok := aliceToken
			if i%2 == 1 {
				tok = bobToken
			}
			if status, _ := initSession(t, base, tok); status == http.StatusOK {
				opened.Add(1)
			}
		}()
	}
	for range 40 {
		<-done
	}
	if n := opened.Load(); n > 5 || n < 1 {
		t.Fatalf("%d sessions opened at once, cap 5", n)
	}
}

// TestWaitingRoundsCannotLockOutChildren (finding 7): two principals, each
// with a round waiting, fill --max-children 2 of server-everything (a
// 2025-era stdio child per principal). A third is refused with a
// retryable -32000 that says when to retry; once the rounds have waited
// --child-round-hold, the least recently used such child is stopped for
// the newcomer, and its round's retry is told to call again.
func TestWaitingRoundsCannotLockOutChildren(t *testing.T) {
	node, script := everything(t)
	// Long enough that alice's round has not waited it out by the time
	// bob's child has started (server-everything takes seconds to start).
	hold := 10 * time.Second
	up, err := upstream.NewPerPrincipal(context.Background(), upstream.StdioConfig{Command: node, Args: []string{script, "stdio"}, RoundHold: hold}, 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	p, err := New(Config{Guard: newGuard(t), Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	caps := `{"elicitation":{"form":{}}}`
	alice := inputRound(t, handleTool(t, p, "alice", "trigger-elicitation-request", caps, ""))
	bob := inputRound(t, handleTool(t, p, "bob", "trigger-elicitation-request", caps, ""))
	if alice == "" || bob == "" {
		t.Fatal("alice's and bob's calls did not ask")
	}
	r := handleTool(t, p, "carol", "trigger-elicitation-request", caps, "")
	var data struct {
		RetryAfter int `json:"retryAfter"`
	}
	if r.Error == nil || r.Error.Code != -32000 || json.Unmarshal(r.Error.Data, &data) != nil || data.RetryAfter < 1 || data.RetryAfter > int(hold/time.Second) {
		t.Fatalf("carol while every child is held: %+v %s", r.Error, r.Result)
	}
	t.Logf("carol: %s", r.Error.Message)
	time.Sleep(time.Duration(data.RetryAfter)*time.Second + 100*time.Millisecond)
	if r := handleTool(t, p, "carol", "trigger-elicitation-request", caps, ""); inputRound(t, r) == "" {
		t.Fatalf("carol after Retry-After: %+v %s", r.Error, r.Result)
	}
	// Alice's child (the least recently used) made room; bob's round lives.
	sb, _ := json.Marshal(bob)
	rb := handleTool(t, p, "bob", "trigger-elicitation-request", caps, `,"requestState":`+string(sb)+`,"inputResponses":{"elicitation":{"action":"accept","content":{"name":"Bob"}}}`)
	if rb.Error != nil || !strings.Contains(string(rb.Result), "Bob") {
		t.Fatalf("bob's retry: %+v %s", rb.Error, rb.Result)
	}
	// (Alice's retry needs a child again, for the proxy's tools/list: it
	// comes last.)
	sa, _ := json.Marshal(alice)
	ra := handleTool(t, p, "alice", "trigger-elicitation-request", caps, `,"requestState":`+string(sa)+`,"inputResponses":{"elicitation":{"action":"accept","content":{"name":"Ada"}}}`)
	if ra.Error == nil || ra.Error.Code != -32602 || !strings.Contains(ra.Error.Message, "call the tool again") {
		t.Fatalf("alice's retry after her child was taken: %+v %s", ra.Error, ra.Result)
	}
}

// TestShutdownAnswersRounds: at shutdown (Close, before the upstream
// closes) each waiting round's upstream request hears cancel, rather
// than a dropped connection.
func TestShutdownAnswersRounds(t *testing.T) {
	var calls atomic.Int64
	actions := make(chan string, 2)
	base, p := serveProxy(t, Config{Guard: newGuard(t), Upstream: askingUpstream(t, &calls, actions)})
	for range 2 {
		if m, _ := callTool(t, base, "ask", "{}", ""); inputRound(t, *m) == "" {
			t.Fatalf("no round: %+v %s", m.Error, m.Result)
		}
	}
	p.Close()
	for range 2 {
		select {
		case a := <-actions:
			if a != "cancel" {
				t.Fatalf("the upstream heard %q", a)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a waiting round was not answered at shutdown")
		}
	}
	if got := metricValue(t, base, "mrtr_proxy_pending_rounds"); got != 0 {
		t.Fatalf("mrtr_proxy_pending_rounds = %v after Close", got)
	}
}
