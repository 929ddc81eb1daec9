package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

type countingSink struct {
	notes atomic.Int64
	final []byte
}

func (*countingSink) Start()                    {}
func (s *countingSink) Notify(raw []byte) error { s.notes.Add(1); return nil }
func (s *countingSink) Final(raw []byte)        { s.final = raw }

// TestLegacyRoundDropsUnheardNotifications: a 2025-era upstream that
// sends notifications while its elicitation waits for the client's retry
// (here 300 progress notifications from a worker of the tool) neither
// stalls nor fills the call's queue: no client request is open to hear
// them, so they are counted and dropped, and the retry's stream carries
// only what comes after it. They used to pile up in the call's events
// (16, then the upstream's stream stalled) and reach the retry late.
func TestLegacyRoundDropsUnheardNotifications(t *testing.T) {
	const n = 300
	var sent atomic.Int64
	srv := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	srv.AddTool(&mcp.Tool{Name: "book", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		go func() {
			time.Sleep(100 * time.Millisecond) // the round has reached the client
			for i := range n {
				if r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "t", Progress: float64(i)}) == nil {
					sent.Add(1)
				}
			}
		}()
		res, err := r.Session.Elicit(ctx, &mcp.ElicitParams{Message: "How many seats?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"seats":{"type":"integer"}},"required":["seats"]}`)})
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(res.Content)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "booked " + string(b)}}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	up, err := upstream.DetectHTTP(context.Background(), httpUpstream(t, ts.URL), false)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Guard: newGuard(t), Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	call := func(extra string) (rpcMsg, int64) {
		t.Helper()
		body := []byte(`{"jsonrpc":"2.0","id":` + fmt.Sprint(idSeq.Add(1)) + `,"method":"tools/call","params":{"name":"book","arguments":{}` +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}` + extra + `}}`)
		m, jerr := mcphttp.ParseMessage(body)
		if jerr != nil {
			t.Fatal(jerr)
		}
		s := &countingSink{}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p.Handle(ctx, m, body, http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {"book"}, "Mcp-Protocol-Version": {"2026-07-28"}}, "alice", s)
		var r rpcMsg
		if err := json.Unmarshal(s.final, &r); err != nil {
			t.Fatalf("%s: %v", s.final, err)
		}
		return r, s.notes.Load()
	}
	first, _ := call("")
	var ir struct {
		ResultType   string `json:"resultType"`
		RequestState string `json:"requestState"`
	}
	if first.Error != nil || json.Unmarshal(first.Result, &ir) != nil || ir.ResultType != "input_required" {
		t.Fatalf("want a round: %+v %s", first.Error, first.Result)
	}
	for deadline := time.Now().Add(10 * time.Second); sent.Load() < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the upstream sent %d of its %d notifications while the round waited: its stream stalled", sent.Load(), n)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(p.up.refused.WithLabelValues("unheard")) < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := testutil.ToFloat64(p.up.refused.WithLabelValues("unheard")); got != n {
		t.Fatalf("%v notifications counted as unheard, want %d", got, n)
	}
	sb, _ := json.Marshal(ir.RequestState)
	done, notes := call(`,"requestState":` + string(sb) + `,"inputResponses":{"elicitation":{"action":"accept","content":{"seats":2}}}`)
	if done.Error != nil || !strings.Contains(string(done.Result), `booked {\"seats\":2}`) {
		t.Fatalf("the retry: %+v %s", done.Error, done.Result)
	}
	if notes != 0 {
		t.Fatalf("the retry's stream carried %d notifications from before it", notes)
	}
}
