package host_test

import (
	"context"
	"fmt"
	"path/filepath"
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

// BenchmarkBookings: one client books in a loop through each ledger in
// turn (interleaved, so that a shared machine's noise falls on all of
// them alike): a Resume (native engine) and Once around an INSERT of the
// booking into PostgreSQL (the shared one, a schema of its own). The
// ledgers: memory, SQLite, Redis, PostgreSQL (Once: claim, INSERT,
// finish: three statements) and PostgreSQL transactional (OnceTx: claim,
// INSERT and result in one transaction). Each iteration also times the
// INSERT alone, and each ledger's Once around an effect that does
// nothing. Per ledger it reports bookings/s (from the median Resume +
// Once with the INSERT), x-memory (that over the memory ledger's), and
// overhead-µs (the median Once around the empty effect: what the ledger
// costs per call); the summary adds once-µs (the median Once with the
// INSERT) and the overhead over memory's.
//
//	go test ./host -run XXX -bench Bookings -benchtime 500x
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
	type variant struct {
		name string
		l    ledger.Ledger
		tx   bool
		g    *host.Guard
		req  *host.Request

		booking, once, overhead []time.Duration
	}
	vs := []*variant{
		{name: "memory", l: ledger.NewMemory()},
		{name: "sqlite", l: sq},
		{name: "redis", l: ledgertest.OpenRedis(b)},
		{name: "postgres", l: pl},
		{name: "postgres-tx", l: pl, tx: true},
	}
	for _, v := range vs {
		v.g = onceGuard(b, keys, host.WithEngine(host.EngineNative), host.WithPoolSize(1), host.WithLedger(v.l))
		v.req = onceAsk(b, v.g, onceAnswer)
	}
	var op string // the operation being booked
	effect := func(ctx context.Context) ([]byte, error) {
		_, err := pool.Exec(ctx, insert, op)
		return result, err
	}
	run := pl.Tx(func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		_, err := tx.Exec(ctx, insert, op)
		return result, err
	})
	noop := func(context.Context) ([]byte, error) { return result, nil }
	noopTx := pl.Tx(func(context.Context, pgx.Tx) ([]byte, error) { return result, nil })
	// book runs one Resume and Once on v with a fresh operation, and
	// returns how long both took and how long Once took.
	book := func(v *variant, i int, what string, effect func(context.Context) ([]byte, error), run func(context.Context, ledger.Op) (ledger.Claim, error)) (time.Duration, time.Duration) {
		t0 := time.Now()
		o, err := v.g.Resume(ctx, v.req)
		if err != nil || o.Status != host.Complete {
			b.Fatal(err)
		}
		o.OperationID = fmt.Sprintf("%s-%s-%d-%d-%s", v.name, what, b.N, i, o.OperationID) // a fresh operation
		op = o.OperationID
		t1 := time.Now()
		var replay bool
		if v.tx {
			_, replay, err = v.g.OnceTx(ctx, o, run)
		} else {
			_, replay, err = v.g.Once(ctx, o, effect)
		}
		if err != nil || replay {
			b.Fatal(replay, err)
		}
		t2 := time.Now()
		return t2.Sub(t0), t2.Sub(t1)
	}
	var bare []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := pool.Exec(ctx, insert, fmt.Sprintf("bare-%d-%d", b.N, i)); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))
		for _, v := range vs {
			_, overhead := book(v, i, "noop", noop, noopTx)
			booking, once := book(v, i, "insert", effect, run)
			v.booking = append(v.booking, booking)
			v.once = append(v.once, once)
			v.overhead = append(v.overhead, overhead)
		}
	}
	b.StopTimer()
	rate := func(v *variant) float64 { return float64(time.Second) / float64(onceMedian(v.booking)) }
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(us(onceMedian(bare)), "insert-µs")
	var sum strings.Builder
	fmt.Fprintf(&sum, "bare INSERT median %.0f µs, %d bookings per ledger\n%-12s %11s %9s %9s %12s %9s\n", us(onceMedian(bare)), b.N,
		"ledger", "bookings/s", "x memory", "once-µs", "overhead-µs", "x memory")
	for _, v := range vs {
		b.ReportMetric(rate(v), v.name+"-bookings/s")
		b.ReportMetric(rate(v)/rate(vs[0]), v.name+"-x-memory")
		b.ReportMetric(us(onceMedian(v.overhead)), v.name+"-overhead-µs")
		fmt.Fprintf(&sum, "%-12s %11.0f %9.2f %9.0f %12.1f %9.0f\n", v.name, rate(v), rate(v)/rate(vs[0]), us(onceMedian(v.once)),
			us(onceMedian(v.overhead)), float64(onceMedian(v.overhead))/float64(onceMedian(vs[0].overhead)))
	}
	if b.N > 1 { // not the one-iteration probe
		b.Log("\n" + sum.String())
	}
}
