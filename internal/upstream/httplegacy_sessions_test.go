package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// legacyWhoami is a 2025-11-25-only server on the official Go SDK whose
// whoami tool answers with the caller's session id. It counts the
// initialize requests and records the sessions ended with DELETE.
type legacyWhoami struct {
	inits atomic.Int64
	mu    sync.Mutex
	ended []string
	url   string
}

func newLegacyWhoami(t *testing.T) *legacyWhoami {
	t.Helper()
	w := &legacyWhoami{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		time.Sleep(5 * time.Millisecond)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Session.ID()}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodDelete:
			w.mu.Lock()
			w.ended = append(w.ended, r.Header.Get("Mcp-Session-Id"))
			w.mu.Unlock()
		case r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "":
			w.inits.Add(1)
		}
		h.ServeHTTP(rw, r)
	}))
	t.Cleanup(ts.Close)
	w.url = ts.URL
	return w
}

func (w *legacyWhoami) endedIDs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.ended...)
}

func legacyOf(t *testing.T, url string) *LegacyHTTP {
	t.Helper()
	u, err := NewHTTP(HTTPOptions{URL: url, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	up, err := DetectHTTP(context.Background(), u, false)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := up.(*LegacyHTTP)
	if !ok {
		t.Fatalf("not detected as legacy: %T", up)
	}
	return l
}

func whoami(t *testing.T, l *LegacyHTTP, principal string) string {
	t.Helper()
	b, err := l.Call(WithPrincipal(context.Background(), principal), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`), nil, nil)
	if err != nil {
		t.Errorf("%s: %v", principal, err)
		return ""
	}
	var r struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &r); err != nil || len(r.Result.Content) != 1 || r.Result.Content[0].Text == "" {
		t.Errorf("%s: %s", principal, b)
		return ""
	}
	return r.Result.Content[0].Text
}

// TestLegacyHTTPSessionsEnd: the upstream sessions a proxy opens for its
// users do not live for ever. One idle past the limit is ended at the
// server (DELETE) and forgotten, and its user gets a new one; past the
// session limit the least recently used goes; Close ends the rest. It
// used to keep every principal's session for the proxy's lifetime.
func TestLegacyHTTPSessionsEnd(t *testing.T) {
	w := newLegacyWhoami(t)
	l := legacyOf(t, w.url)
	l.idle, l.every, l.most = 50*time.Millisecond, time.Millisecond, 2

	a1 := whoami(t, l, "alice")
	time.Sleep(80 * time.Millisecond)
	b1 := whoami(t, l, "bob") // finds alice's session idle
	waitFor(t, func() bool { return slices.Contains(w.endedIDs(), a1) }, "alice's idle session was not ended at the server")
	if a2 := whoami(t, l, "alice"); a2 == a1 || a2 == "" {
		t.Fatalf("alice kept the ended session %q", a1)
	}

	// The limit: two sessions; carol's third one ends the least recently
	// used (bob's), while alice's, just used, stays.
	l.idle = time.Hour
	whoami(t, l, "alice")
	whoami(t, l, "carol")
	waitFor(t, func() bool { return slices.Contains(w.endedIDs(), b1) }, "past the limit, the least recently used session was not ended")
	l.mu.Lock()
	n := len(l.sessions)
	_, alice := l.sessions["alice"]
	l.mu.Unlock()
	if n != 2 || !alice {
		t.Fatalf("%d sessions kept (alice's: %v), want 2 with alice's", n, alice)
	}

	before := len(w.endedIDs())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := len(w.endedIDs()) - before; got != 2 {
		t.Fatalf("Close ended %d sessions, want 2", got)
	}
}

// TestLegacyHTTPOneInitializePerPrincipal: a principal's concurrent first
// calls share one initialize; each used to open a session of its own, and
// all but the last were lost.
func TestLegacyHTTPOneInitializePerPrincipal(t *testing.T) {
	w := newLegacyWhoami(t)
	l := legacyOf(t, w.url)
	defer l.Close()
	detect := w.inits.Load()
	var wg sync.WaitGroup
	ids := make([]string, 20)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i] = whoami(t, l, "alice")
		}()
	}
	wg.Wait()
	if n := w.inits.Load() - detect; n != 1 {
		t.Fatalf("%d initialize requests for one principal's 20 concurrent first calls, want 1", n)
	}
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("one principal's calls ran in two sessions: %q and %q", ids[0], id)
		}
	}
}

func waitFor(t *testing.T, ok func() bool, msg string) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatal(msg)
}
