package ledger

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
)

func benchBackends(b *testing.B) []struct {
	name string
	l    Ledger
} {
	return []struct {
		name string
		l    Ledger
	}{
		{"memory", NewMemory()},
		{"sqlite", openTestSQLite(b, filepath.Join(b.TempDir(), "bench.db"))},
		{"redis", openTestRedis(b)},
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
	fp := fpOf("answers")
	res := []byte(`{"resultType":"complete","content":[{"type":"text","text":"Booked a demo for Ann Lee on 3 March"}]}`)
	for _, be := range benchBackends(b) {
		b.Run(be.name, func(b *testing.B) {
			prefix := newOp(b) + "-"
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				op := prefix + strconv.Itoa(i)
				t0 := time.Now()
				c, err := be.l.Claim(ctx, op, fp, 30*time.Second)
				if err != nil || c.Status != Acquired {
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
	fp := fpOf("answers")
	for _, be := range benchBackends(b) {
		b.Run(be.name, func(b *testing.B) {
			op := newOp(b)
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
				if err != nil || c.Status != Finished {
					b.Fatal(c.Status, err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			reportLatencies(b, lat)
		})
	}
}
