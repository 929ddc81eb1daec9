package redis

// What Once costs per call on each Redis deployment, beside the memory
// ledger, in one run (private servers on loopback, never the shared one):
//
//	go test ./ledger/redis -run XXX -bench BenchmarkOnceDeployments -benchtime 2000x
//
// Each reports its median and p99 (p50-µs, p99-µs) and its median as a
// multiple of the memory ledger's (x-memory) and of one Redis node's
// (x-redis).

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/ledgertest"
)

func BenchmarkOnceDeployments(b *testing.B) {
	m := ledgertest.StartRedis(b)
	single := ledgertest.StartRedis(b)
	ledgertest.StartReplica(b, m)
	cluster := ledgertest.StartCluster(b, 3, 1, 5*time.Second)
	keys := host.NewKeyring()
	var memoryP50, redisP50 time.Duration
	for _, be := range []struct{ name, setting string }{
		{"memory", "memory:"},
		{"redis", single.URL()},
		{"redis+wait", m.URL() + "?wait_replicas=1&wait_timeout=1s"},
		{"cluster", cluster.URL()},
		{"cluster+wait", cluster.URL() + "&wait_replicas=1&wait_timeout=1s"},
	} {
		l, err := ledger.Open(context.Background(), be.setting)
		if err != nil {
			b.Fatal(err)
		}
		g, err := host.New(context.Background(), host.WithKeys(keys), host.WithAudience("bench.example"),
			host.WithEngine(host.EngineNative), host.WithLedger(l))
		if err != nil {
			b.Fatal(err)
		}
		u := newFleetUser(b, g, 0)
		effect := func(context.Context) ([]byte, error) { return []byte(`{"resultType":"complete"}`), nil }
		ctx := context.Background()
		seq := 0 // b.Run runs the function more than once: never reuse an id
		op := u.out.OperationID
		b.Run(be.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				seq++
				u.out.OperationID = strconv.Itoa(seq) + op // a fresh operation
				t0 := time.Now()
				if _, replay, err := g.Once(ctx, u.out, effect); err != nil || replay {
					b.Fatal(replay, err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			p50 := lat[len(lat)/2]
			b.ReportMetric(float64(p50.Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
			switch be.name {
			case "memory":
				memoryP50 = p50
			case "redis":
				redisP50 = p50
			}
			b.ReportMetric(float64(p50)/float64(memoryP50), "x-memory")
			if redisP50 > 0 {
				b.ReportMetric(float64(p50)/float64(redisP50), "x-redis")
			}
		})
		_ = g.Close(context.Background())
		_ = l.Close()
	}
}
