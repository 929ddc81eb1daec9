package identity

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/oidcop"
)

// BenchmarkVerify checks one RS256 access token of a real provider with
// a warm JWKS: "signature" verifies it every time (the first request of
// each token), "cached" is every later request with the same token (a
// SHA-256 and a map lookup until the token expires). p50-ns is the median
// of the timed operations.
func BenchmarkVerify(b *testing.B) {
	op := oidcop.Start(b)
	a, _ := build(b, op, Flags{Scopes: "mcp"}, nil)
	tok := op.Token(b, "agent-alice", resource, "mcp")
	v := a.Verifier()
	ctx := context.Background()
	run := func(b *testing.B, f func() error) {
		lat := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	}
	b.Run("signature", func(b *testing.B) {
		run(b, func() error { _, err := v.verify(ctx, tok, time.Now()); return err })
	})
	b.Run("cached", func(b *testing.B) {
		run(b, func() error { _, err := a.Authenticate(ctx, tok); return err })
	})
}
