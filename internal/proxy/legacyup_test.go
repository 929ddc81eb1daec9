package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/testenv"
	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

// everythingUpstream starts server-everything (e2e's npm packages) as a
// stdio upstream with a child per principal; roots: declare roots to it.
func everythingUpstream(t *testing.T, roots bool) *upstream.PerPrincipal {
	t.Helper()
	script, _ := filepath.Abs("../../e2e/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	testenv.RequireFile(t, "server-everything (e2e's npm packages)", script, "run `npm ci` in e2e/; ./test.sh does")
	node, script := everything(t)
	up, err := upstream.NewPerPrincipal(context.Background(), upstream.StdioConfig{Command: node, Args: []string{script, "stdio"}, Roots: roots}, 4, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	return up
}

type finalSink struct{ final []byte }

func (*finalSink) Start()              {}
func (*finalSink) Notify([]byte) error { return nil }
func (s *finalSink) Final(raw []byte)  { s.final = raw }

// handleTool runs one 2026-07-28 tools/call through p.Handle for
// principal, with the client capabilities caps; extra is spliced into
// params.
func handleTool(t *testing.T, p *Proxy, principal, name, caps, extra string) rpcMsg {
	t.Helper()
	body := []byte(`{"jsonrpc":"2.0","id":` + fmt.Sprint(idSeq.Add(1)) + `,"method":"tools/call","params":{"name":"` + name + `","arguments":{}` +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}` + extra + `}}`)
	m, jerr := mcphttp.ParseMessage(body)
	if jerr != nil {
		t.Fatal(jerr)
	}
	s := &finalSink{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {name}, "Mcp-Protocol-Version": {"2026-07-28"}}
	p.Handle(ctx, m, body, h, principal, s)
	var r rpcMsg
	if err := json.Unmarshal(s.final, &r); err != nil {
		t.Fatalf("%s: %v", s.final, err)
	}
	return r
}

// TestLegacyUpstreamRoots: with roots declared to it (--upstream-roots),
// server-everything's get-roots-list asks roots/list during the call; for
// a 2026-07-28 client that declared roots that is an input_required round
// (or two: the roots/list it sends 350 ms after initialized lands in the
// same call, the only one open on that principal's child), and the roots
// it answers come back in the result. A client that declared no roots is
// not failed for it: the upstream hears that it has none.
func TestLegacyUpstreamRoots(t *testing.T) {
	p, err := New(Config{Guard: newGuard(t), Upstream: everythingUpstream(t, true)})
	if err != nil {
		t.Fatal(err)
	}
	roots := `{"roots":{}}`
	r := handleTool(t, p, "alice", "get-roots-list", roots, "")
	for round := 0; ; round++ {
		var ir struct {
			ResultType    string                     `json:"resultType"`
			RequestState  string                     `json:"requestState"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
		}
		if r.Error != nil || json.Unmarshal(r.Result, &ir) != nil {
			t.Fatalf("round %d: %+v %s", round, r.Error, r.Result)
		}
		if ir.ResultType != "input_required" {
			t.Logf("alice: %d rounds", round)
			break
		}
		if round >= 3 {
			t.Fatalf("still asking after %d rounds: %s", round, r.Result)
		}
		if got := string(ir.InputRequests["roots"]); !strings.Contains(got, `"method":"roots/list"`) {
			t.Fatalf("round %d asks %s", round, r.Result)
		}
		sb, _ := json.Marshal(ir.RequestState)
		r = handleTool(t, p, "alice", "get-roots-list", roots, `,"requestState":`+string(sb)+
			`,"inputResponses":{"roots":{"roots":[{"uri":"file:///srv/alice","name":"alice's work"}]}}`)
	}
	if !strings.Contains(string(r.Result), "file:///srv/alice") || !strings.Contains(string(r.Result), "alice's work") {
		t.Fatalf("the roots did not come back: %s", r.Result)
	}

	// Bob declared no roots: his call is not failed with -32021.
	b := handleTool(t, p, "bob", "get-roots-list", `{"elicitation":{}}`, "")
	t.Logf("bob: %.120s", b.Result)
	if b.Error != nil || strings.Contains(string(b.Result), "input_required") || strings.Contains(string(b.Result), "file:///srv/alice") {
		t.Fatalf("bob: %+v %s", b.Error, b.Result)
	}
	if got := testutil.ToFloat64(p.up.refused.WithLabelValues("capability")); got < 1 {
		t.Fatalf("refused{capability} = %v", got)
	}
}

// TestLegacyHTTPUpstreamRoots: the same over Streamable HTTP, with an
// upstream on the Go SDK that speaks only 2025-11-25 and asks roots/list
// on the call's stream; without --upstream-roots it is not offered roots.
func TestLegacyHTTPUpstreamRoots(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	srv.AddTool(&mcp.Tool{Name: "roots", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text := "no roots"
		if res, err := r.Session.ListRoots(ctx, nil); err == nil {
			text = "roots:"
			for _, root := range res.Roots {
				text += " " + root.URI
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	for _, declare := range []bool{false, true} {
		up, err := upstream.DetectHTTP(context.Background(), httpUpstream(t, ts.URL), declare)
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(Config{Guard: newGuard(t), Upstream: up})
		if err != nil {
			t.Fatal(err)
		}
		r := handleTool(t, p, "alice", "roots", `{"roots":{}}`, "")
		if !declare {
			if !strings.Contains(string(r.Result), `"no roots"`) {
				t.Fatalf("roots not declared, yet: %+v %s", r.Error, r.Result)
			}
			continue
		}
		var ir struct {
			ResultType   string `json:"resultType"`
			RequestState string `json:"requestState"`
		}
		if r.Error != nil || json.Unmarshal(r.Result, &ir) != nil || ir.ResultType != "input_required" || !strings.Contains(string(r.Result), `"roots/list"`) {
			t.Fatalf("want a roots round: %+v %s", r.Error, r.Result)
		}
		sb, _ := json.Marshal(ir.RequestState)
		r = handleTool(t, p, "alice", "roots", `{"roots":{}}`, `,"requestState":`+string(sb)+`,"inputResponses":{"roots":{"roots":[{"uri":"file:///srv/alice"}]}}`)
		if !strings.Contains(string(r.Result), `"roots: file:///srv/alice"`) {
			t.Fatalf("after the round: %+v %s", r.Error, r.Result)
		}
		if b := handleTool(t, p, "bob", "roots", `{}`, ""); !strings.Contains(string(b.Result), `"no roots"`) {
			t.Fatalf("bob declared no roots: %+v %s", b.Error, b.Result)
		}
	}
}

// TestLegacyRoundExpires: a round of a legacy upstream (server-everything
// as a stdio child) that nobody retries is answered cancel when its time
// is up, freed, and a late retry is told to call the tool again.
func TestLegacyRoundExpires(t *testing.T) {
	up := everythingUpstream(t, false)
	base, p := serveProxy(t, Config{Guard: newGuard(t), Upstream: up, PendingTTL: 300 * time.Millisecond})

	r1, _ := callTool(t, base, "trigger-elicitation-request", "{}", "")
	var ir struct {
		ResultType   string `json:"resultType"`
		RequestState string `json:"requestState"`
	}
	if json.Unmarshal(r1.Result, &ir) != nil || ir.ResultType != "input_required" {
		t.Fatalf("want input_required, got %s", r1.Result)
	}
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(p.up.rounds.WithLabelValues("expired")) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the round did not expire")
		}
		time.Sleep(20 * time.Millisecond)
	}
	n := 0
	p.pending.m.Range(func(any, any) bool { n++; return true })
	if n != 0 {
		t.Fatalf("%d rounds still pending after expiry", n)
	}
	sb, _ := json.Marshal(ir.RequestState)
	r2, _ := callTool(t, base, "trigger-elicitation-request", "{}", `,"requestState":`+string(sb)+`,"inputResponses":{"elicitation":{"action":"accept","content":{"name":"Ada"}}}`)
	if r2.Error == nil || r2.Error.Code != -32602 || !strings.Contains(r2.Error.Message, "call the tool again") {
		t.Fatalf("a late retry: %+v %s", r2.Error, r2.Result)
	}
	// The child was answered and still serves the next call.
	r3, _ := callTool(t, base, "trigger-elicitation-request", "{}", "")
	if json.Unmarshal(r3.Result, &ir) != nil || ir.ResultType != "input_required" {
		t.Fatalf("next call: %s", r3.Result)
	}
}
