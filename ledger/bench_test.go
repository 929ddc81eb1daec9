package ledger_test

// Claim + finish per operation for every backend, in one run:
//
//	go test ./ledger -run XXX -bench . -benchtime 5000x
//
// Each reports its median and p99 latency (p50-µs, p99-µs).

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/ledgertest"
	_ "github.com/mrtr-wasm/mrtr-wasm/ledger/redis"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/sqlite"
)

func benchBackends(b *testing.B) []struct {
	name string
	l    ledger.Ledger
} {
	return []struct {
		name string
		l    ledger.Ledger
	}{
		{"memory", ledger.NewMemory()},
		{"sqlite", openSQLite(b, filepath.Join(b.TempDir(), "bench.db"))},
		{"redis", ledgertest.OpenRedis(b)},
	}
}

func reportLatencies(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	b.ReportMetric(float64(s[len(s)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(s[len(s)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkClaimFinish: a fresh operation claimed and finished with a
// 100-byte result: what Once adds to a first complete retry.
func BenchmarkClaimFinish(b *testing.B) {
	ctx := context.Background()
	fp := ledgertest.FP("answers")
	res := []byte(`{"resultType":"complete","content":[{"type":"text","text":"Booked a demo for Ann Lee on 3 March"}]}`)
	for _, be := range benchBackends(b) {
		b.Run(be.name, func(b *testing.B) {
			prefix := ledgertest.NewOp(b) + "-"
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				op := prefix + strconv.Itoa(i)
				t0 := time.Now()
				c, err := be.l.Claim(ctx, op, fp, 30*time.Second)
				if err != nil || c.Status != ledger.Acquired {
					b.Fatal(c.Status, err)
				}
				if err := be.l.Finish(ctx, op, c.Token, fp, res, 6*time.Minute); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			reportLatencies(b, lat)
		})
	}
}

// BenchmarkReplay: a claim that finds the operation finished: what a
// duplicate retry costs.
func BenchmarkReplay(b *testing.B) {
	ctx := context.Background()
	fp := ledgertest.FP("answers")
	for _, be := range benchBackends(b) {
		b.Run(be.name, func(b *testing.B) {
			op := ledgertest.NewOp(b)
			c, err := be.l.Claim(ctx, op, fp, 30*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			if err := be.l.Finish(ctx, op, c.Token, fp, []byte(`{"resultType":"complete"}`), 6*time.Minute); err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				c, err := be.l.Claim(ctx, op, fp, 30*time.Second)
				if err != nil || c.Status != ledger.Finished {
					b.Fatal(c.Status, err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			reportLatencies(b, lat)
		})
	}
}

func openSQLite(b *testing.B, path string) ledger.Ledger {
	l, err := sqlite.Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	return l
}
