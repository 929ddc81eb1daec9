package legacy

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCapabilities(t *testing.T) {
	for _, c := range []struct {
		caps *mcp.ClientCapabilities
		want string
	}{
		{nil, `{}`},
		{&mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}, `{"elicitation":{"form":{}}}`}, // 2025-06-18: empty means form
		{&mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}, `{"elicitation":{"url":{}}}`},
		{&mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{Tools: &mcp.SamplingToolsCapabilities{}}, RootsV2: &mcp.RootCapabilities{}},
			`{"roots":{},"sampling":{"tools":{}}}`},
	} {
		ip := &mcp.InitializeParams{ProtocolVersion: "2025-11-25", Capabilities: c.caps}
		if got := string(Capabilities(ip)); got != c.want {
			t.Errorf("%+v: got %s, want %s", c.caps, got, c.want)
		}
	}
}

func TestSchemaMismatch(t *testing.T) {
	f, ok := schemaMismatch(errors.New("elicitation result content does not match requested schema: validating root: validating /properties/integer: maximum: 150/1 is greater than 100"))
	if !ok || f != "integer" {
		t.Fatalf("got %q %v", f, ok)
	}
	if _, ok := schemaMismatch(errors.New("connection reset")); ok {
		t.Fatal("any error taken for a schema mismatch")
	}
}

// The router sends initialize of an earlier revision, and requests that
// name a session, to the session handler; everything else (an initialize
// sent as 2026-07-28 included) to the stateless one; past the cap a new
// session gets 503 with the request's id.
func TestRouter(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	var hit string
	modern := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit = "modern" })
	sessions := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit = "legacy" })
	refused := 0
	h := Router(modern, &Sessions{Handler: sessions, Server: srv, Max: 1, Refused: func() { refused++ }}, 1<<20)
	do := func(body string, hdr map[string]string) *httptest.ResponseRecorder {
		hit = ""
		r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	init := `{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`
	if do(init, nil); hit != "legacy" {
		t.Fatalf("initialize went to %q", hit)
	}
	if do(init, map[string]string{"MCP-Protocol-Version": "2026-07-28"}); hit != "modern" {
		t.Fatalf("a 2026-07-28 initialize went to %q", hit)
	}
	if do(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": "abc"}); hit != "legacy" {
		t.Fatalf("a session's request went to %q", hit)
	}
	if do(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, nil); hit != "modern" {
		t.Fatalf("a stateless request went to %q", hit)
	}
	// The quick test for "initialize" misses no spelling of it.
	if do(`{"jsonrpc":"2.0","id":9,"method":"\u0069nit\u0069alize","params":{"protocolVersion":"2025-11-25"}}`, nil); hit != "legacy" {
		t.Fatalf("an initialize spelled with escapes went to %q", hit)
	}
	if do(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"initialize"}}`, nil); hit != "modern" {
		t.Fatalf("a call of a tool named initialize went to %q", hit)
	}
	// One live session fills the cap of 1.
	st, _ := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	w := do(init, nil)
	if hit != "" || w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), `"id":9`) || refused != 1 {
		t.Fatalf("past the cap: hit %q, %d %s, refused %d", hit, w.Code, w.Body, refused)
	}
}

// TestFailedByKind: a tool that cannot go on gets an error result; a
// prompt or a resource, which have none, a JSON-RPC error with the text.
func TestFailedByKind(t *testing.T) {
	tr, err := failed[*mcp.CallToolResult]("why")
	if err != nil || !tr.IsError || tr.Content[0].(*mcp.TextContent).Text != "why" {
		t.Fatalf("tool: %+v %v", tr, err)
	}
	pr, err := failed[*mcp.GetPromptResult]("why")
	var je *jsonrpc.Error
	if pr != nil || !errors.As(err, &je) || je.Message != "why" {
		t.Fatalf("prompt: %+v %v", pr, err)
	}
	if kindOf[*mcp.ReadResourceResult]() != "resource" || kindOf[*mcp.GetPromptResult]() != "prompt" || kindOf[*mcp.CallToolResult]() != "tool" {
		t.Fatal("kindOf")
	}
	reqs, state := pending(&mcp.ReadResourceResult{RequestState: "s", InputRequests: mcp.InputRequestMap{"k": &mcp.ListRootsParams{}}})
	if len(reqs) != 1 || state != "s" {
		t.Fatalf("pending: %v %q", reqs, state)
	}
	if reqs, _ := pending[*mcp.GetPromptResult](nil); reqs != nil {
		t.Fatal("a nil result asks for something")
	}
}
