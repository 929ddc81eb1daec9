package host_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/ledgertest"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/postgres"
)

// BenchmarkBookings: one client books in a loop, each booking a Resume
// (native engine) and Once around an INSERT of the booking into
// PostgreSQL (the shared one, a schema of its own), with each ledger in
// one run: memory, SQLite, Redis, PostgreSQL (Once: claim, INSERT,
// finish, three statements) and PostgreSQL transactional (OnceTx: claim,
// INSERT and result in one transaction). "effect" is the INSERT alone.
// Each reports bookings/s, once-µs (the median Once, effect included),
// overhead-µs (once-µs less the median bare INSERT), and x-memory (its
// bookings/s over the memory ledger's; overhead-x-memory, its overhead-µs
// over memory's).
//
//	go test ./host -run XXX -bench Bookings -benchtime 2000x
func BenchmarkBookings(b *testing.B) {
	ctx := context.Background()
	setting := ledgertest.PostgresSchema(b)
	pool, err := pgxpool.New(ctx, setting)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `CREATE TABLE bookings (op text PRIMARY KEY, name text NOT NULL, email text NOT NULL, slot text NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	pl := ledgertest.OpenPostgresAt(b, setting).(*postgres.Ledger)
	sq, err := ledger.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "ledger.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sq.Close() })
	const insert = `INSERT INTO bookings (op, name, email, slot) VALUES ($1, 'Ann Lee', 'ann@example.com', '2026-12-07T15:00:00Z')`
	result := []byte(`{"id":"bk_0123456789abcdef","name":"Ann Lee","email":"ann@example.com","slot":"2026-12-07T15:00:00Z"}`)
	keys, _ := host.ParseKeys("k4.local." + strings.Repeat("A", 43))
	seq := 0
	// fresh gives each booking an operation id of its own.
	fresh := func(o *host.Outcome) string {
		seq++
		o.OperationID = strconv.Itoa(seq) + "-" + o.OperationID
		return o.OperationID
	}
	type row struct{ perBooking, once time.Duration }
	var effectMedian time.Duration
	got := map[string]row{}
	order := []string{}

	b.Run("effect", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			seq++
			t0 := time.Now()
			if _, err := pool.Exec(ctx, insert, "bare-"+strconv.Itoa(seq)); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		effectMedian = onceMedian(lat)
		onceReport(b, "", lat)
	})
	for _, be := range []struct {
		name string
		l    func(b *testing.B) ledger.Ledger
		tx   bool
	}{
		{"memory", func(*testing.B) ledger.Ledger { return ledger.NewMemory() }, false},
		{"sqlite", func(*testing.B) ledger.Ledger { return sq }, false},
		{"redis", func(b *testing.B) ledger.Ledger { return ledgertest.OpenRedis(b) }, false},
		{"postgres", func(*testing.B) ledger.Ledger { return pl }, false},
		{"postgres-tx", func(*testing.B) ledger.Ledger { return pl }, true},
	} {
		b.Run(be.name, func(b *testing.B) {
			g := onceGuard(b, keys, host.WithEngine(host.EngineNative), host.WithPoolSize(1), host.WithLedger(be.l(b)))
			req := onceAsk(b, g, onceAnswer)
			var op string
			effect := func(ctx context.Context) ([]byte, error) {
				_, err := pool.Exec(ctx, insert, op)
				return result, err
			}
			run := pl.Tx(func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
				_, err := tx.Exec(ctx, insert, op)
				return result, err
			})
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				o, err := g.Resume(ctx, req)
				if err != nil || o.Status != host.Complete {
					b.Fatal(err)
				}
				op = fresh(o)
				t0 := time.Now()
				var replay bool
				if be.tx {
					_, replay, err = g.OnceTx(ctx, o, run)
				} else {
					_, replay, err = g.Once(ctx, o, effect)
				}
				if err != nil || replay {
					b.Fatal(replay, err)
				}
				lat = append(lat, time.Since(t0))
			}
			elapsed := time.Since(start)
			b.StopTimer()
			r := row{perBooking: elapsed / time.Duration(b.N), once: onceMedian(lat)}
			if _, ok := got[be.name]; !ok {
				order = append(order, be.name)
			}
			got[be.name] = r
			b.ReportMetric(float64(time.Second)/float64(r.perBooking), "bookings/s")
			b.ReportMetric(float64(r.once.Nanoseconds())/1e3, "once-µs")
			b.ReportMetric(float64((r.once-effectMedian).Nanoseconds())/1e3, "overhead-µs")
			if m, ok := got["memory"]; ok {
				b.ReportMetric(float64(m.perBooking)/float64(r.perBooking), "rate-x-memory")
				b.ReportMetric(float64(r.once-effectMedian)/float64(m.once-effectMedian), "overhead-x-memory")
			}
		})
	}
	m := got["memory"]
	var sum strings.Builder
	fmt.Fprintf(&sum, "bare INSERT median %v\n%-12s %12s %10s %12s %10s %12s\n", effectMedian, "ledger", "bookings/s", "x memory", "overhead-µs", "x memory", "once-µs")
	for _, n := range order {
		r := got[n]
		fmt.Fprintf(&sum, "%-12s %12.0f %10.2f %12.1f %10.2f %12.1f\n", n, float64(time.Second)/float64(r.perBooking),
			float64(m.perBooking)/float64(r.perBooking), float64((r.once-effectMedian).Nanoseconds())/1e3,
			float64(r.once-effectMedian)/float64(m.once-effectMedian), float64(r.once.Nanoseconds())/1e3)
	}
	b.Log("\n" + sum.String())
}
