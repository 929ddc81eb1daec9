package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkBookingEras books one demo call per iteration through the real
// server over HTTP (guard.wasm, shipped policy, SQLite CRM), with the
// official Go SDK client in each era: 2026-07-28 (stateless, three
// requests carrying the sealed state) and 2025-11-25 (one tools/call on a
// session; the server sends two elicitation/create requests on it). p50
// and p99 of a whole booking are reported beside the mean.
func BenchmarkBookingEras(b *testing.B) {
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		b.Run(era, func(b *testing.B) {
			ts, _ := newTestServer(b, nil)
			n := 0
			c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					n++
					if _, ok := propsOf(r.Params.RequestedSchema)["email"]; ok {
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Bench", "email": "ada@example.com"}}, nil
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"slot": firstConst(r.Params.RequestedSchema), "confirm": true}}, nil
				},
			})
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "book_demo_call", Arguments: map[string]any{}})
				lat = append(lat, time.Since(t0))
				if err != nil || res.IsError {
					b.Fatalf("booking: %v %+v", err, res)
				}
			}
			b.StopTimer()
			if n != 2*b.N {
				b.Fatalf("%d elicitations for %d bookings", n, b.N)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkLegacySessionMemory opens 200 idle 2025-11-25 sessions and
// reports the server process's heap and goroutines per session (client
// and server share the process; the client's share is measured apart and
// subtracted).
func BenchmarkLegacySessionMemory(b *testing.B) {
	const sessions = 200
	ts, _ := newTestServer(b, nil)
	measure := func() (uint64, int) {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc, runtime.NumGoroutine()
	}
	for i := 0; i < b.N; i++ {
		c := mcp.NewClient(&mcp.Implementation{Name: "idle", Version: "1"}, nil)
		h0, g0 := measure()
		var all []*mcp.ClientSession
		for j := 0; j < sessions; j++ {
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				b.Fatal(err)
			}
			all = append(all, cs)
		}
		time.Sleep(100 * time.Millisecond)
		h1, g1 := measure()
		b.ReportMetric(float64(h1-h0)/sessions, "heap-B/session(client+server)")
		b.ReportMetric(float64(g1-g0)/sessions, "goroutines/session(client+server)")
		for _, cs := range all {
			cs.Close()
		}
	}
}

func propsOf(schema any) map[string]any {
	bs, _ := json.Marshal(schema)
	var s struct {
		Properties map[string]any `json:"properties"`
	}
	_ = json.Unmarshal(bs, &s)
	return s.Properties
}

func firstConst(schema any) string {
	p, _ := propsOf(schema)["slot"].(map[string]any)
	one, _ := p["oneOf"].([]any)
	if len(one) == 0 {
		panic(fmt.Sprintf("no slot options in %v", schema))
	}
	return one[0].(map[string]any)["const"].(string)
}
