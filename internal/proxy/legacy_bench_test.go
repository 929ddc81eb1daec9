package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkLegacyPromptEras: a 2025-11-25 client (the Go SDK pinned to
// it) gets a prompt that asks one question (prompts/get, one round) and
// reads a resource (resources/read, no round) from promptsUpstream.
// "direct" is the client on the upstream's own session (the Go SDK
// fulfils the round itself, unguarded); "proxy" is the same client on a
// proxy session in front of the stateless upstream: each request becomes
// a 2026-07-28 request through Handle, the round is sealed, answered on
// the session, validated, and forwarded once through the ledger.
func BenchmarkLegacyPromptEras(b *testing.B) {
	up := promptsUpstream()
	direct := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	b.Cleanup(direct.Close)
	stateless := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, &mcp.StreamableHTTPOptions{Stateless: true}))
	b.Cleanup(stateless.Close)
	proxied, _ := newProxy(b, newGuard(b), httpUpstream(b, stateless.URL))
	for _, c := range []struct{ name, endpoint string }{{"direct", direct.URL}, {"proxy", proxied + "/mcp"}} {
		b.Run(c.name, func(b *testing.B) {
			cl := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"tone": "warm"}}, nil
				},
			})
			ctx := context.Background()
			cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			var prompt, read []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "Ada"}})
				prompt = append(prompt, time.Since(t0))
				if err != nil || len(gp.Messages) != 1 || !strings.Contains(gp.Messages[0].Content.(*mcp.TextContent).Text, "warm") {
					b.Fatalf("prompts/get: %v %+v", err, gp)
				}
				t0 = time.Now()
				rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://note"})
				read = append(read, time.Since(t0))
				if err != nil || len(rr.Contents) != 1 {
					b.Fatalf("resources/read: %v %+v", err, rr)
				}
			}
			b.StopTimer()
			for _, m := range []struct {
				what string
				lat  []time.Duration
			}{{"prompt", prompt}, {"read", read}} {
				slices.Sort(m.lat)
				b.ReportMetric(float64(m.lat[len(m.lat)/2].Microseconds())/1000, m.what+"-p50-ms")
				b.ReportMetric(float64(m.lat[len(m.lat)*99/100].Microseconds())/1000, m.what+"-p99-ms")
			}
		})
	}
}
