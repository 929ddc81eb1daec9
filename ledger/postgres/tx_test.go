package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/ledgertest"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/postgres"
)

// txLedger opens the ledger on a pool of the test's own (New), in a
// schema with a table the effects write to.
func txLedger(t *testing.T) (*postgres.Ledger, *pgxpool.Pool) {
	t.Helper()
	setting := ledgertest.PostgresSchema(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, setting)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `CREATE TABLE effects (op text PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	l, err := postgres.New(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	return l, pool
}

func effects(t *testing.T, pool *pgxpool.Pool, op string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM effects WHERE op = $1`, op).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func write(op string, runs *int) postgres.Effect {
	return func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		*runs++
		_, err := tx.Exec(ctx, `INSERT INTO effects (op) VALUES ($1)`, op)
		return []byte("wrote " + op), err
	}
}

func TestOnceTx(t *testing.T) {
	l, pool := txLedger(t)
	ctx := context.Background()
	a, b := ledgertest.FP("a"), ledgertest.FP("b")
	op := ledger.Op{ID: ledgertest.NewOp(t), Fingerprint: a, Lease: time.Minute, TTL: time.Hour}
	runs := 0

	// An error or a panic in the effect rolls its writes back with the claim.
	boom := errors.New("boom")
	_, err := l.OnceTx(ctx, op, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		_, _ = write(op.ID, &runs)(ctx, tx)
		return nil, boom
	})
	if !errors.Is(err, boom) || errors.Is(err, ledger.ErrUnavailable) {
		t.Fatalf("effect error: %v", err)
	}
	func() {
		defer func() { _ = recover() }()
		_, _ = l.OnceTx(ctx, op, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			_, _ = write(op.ID, &runs)(ctx, tx)
			panic("bug")
		})
		t.Fatal("the panic was swallowed")
	}()
	if effects(t, pool, op.ID) != 0 {
		t.Fatal("a failed effect's write stayed")
	}
	ledgertest.MustGet(t, l, op.ID, ledger.Absent)

	c, err := l.OnceTx(ctx, op, write(op.ID, &runs))
	if err != nil || c.Status != ledger.Acquired || string(c.Result) != "wrote "+op.ID {
		t.Fatalf("%+v %v", c, err)
	}
	if e := ledgertest.MustGet(t, l, op.ID, ledger.Done); string(e.Result) != "wrote "+op.ID {
		t.Fatalf("stored %q", e.Result)
	}
	runs = 0
	c, err = l.OnceTx(ctx, op, write(op.ID, &runs))
	if err != nil || c.Status != ledger.Finished || string(c.Result) != "wrote "+op.ID || runs != 0 {
		t.Fatalf("replay: %+v %v, %d runs", c, err, runs)
	}
	op.Fingerprint = b
	if c, err = l.OnceTx(ctx, op, write(op.ID, &runs)); err != nil || c.Status != ledger.Conflict || runs != 0 {
		t.Fatalf("other answers: %+v %v", c, err)
	}
	if effects(t, pool, op.ID) != 1 {
		t.Fatal("the effect's write is not there once")
	}
}

// TestOnceTxMeetsClaims: OnceTx and the plain calls share the table. A
// live claim makes OnceTx answer InProgress; once it expires, OnceTx takes
// the operation over. A transaction that holds an operation makes a
// second OnceTx answer InProgress after the claim's lock wait.
func TestOnceTxMeetsClaims(t *testing.T) {
	l, pool := txLedger(t)
	ctx := context.Background()
	fp := ledgertest.FP("a")
	runs := 0

	op := ledger.Op{ID: ledgertest.NewOp(t), Fingerprint: fp, Lease: time.Minute, TTL: time.Hour}
	ledgertest.MustClaim(t, l, op.ID, fp, time.Second, ledger.Acquired)
	if c, err := l.OnceTx(ctx, op, write(op.ID, &runs)); err != nil || c.Status != ledger.InProgress || runs != 0 {
		t.Fatalf("over a live claim: %+v %v", c, err)
	}
	time.Sleep(1100 * time.Millisecond)
	if c, err := l.OnceTx(ctx, op, write(op.ID, &runs)); err != nil || c.Status != ledger.Acquired || runs != 1 {
		t.Fatalf("over an expired claim: %+v %v", c, err)
	}

	op2 := ledger.Op{ID: ledgertest.NewOp(t), Fingerprint: fp, Lease: time.Minute, TTL: time.Hour}
	holding := make(chan struct{})
	release := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := l.OnceTx(ctx, op2, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			close(holding)
			<-release
			return []byte("first"), nil
		})
		first <- err
	}()
	<-holding
	t0 := time.Now()
	c, err := l.OnceTx(ctx, op2, write(op2.ID, &runs))
	if err != nil || c.Status != ledger.InProgress {
		t.Fatalf("while another transaction holds it: %+v %v", c, err)
	}
	if d := time.Since(t0); d < 150*time.Millisecond || d > 5*time.Second {
		t.Fatalf("waited %v for the holder, want about 200 ms", d)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if c, err := l.OnceTx(ctx, op2, write(op2.ID, &runs)); err != nil || c.Status != ledger.Finished || string(c.Result) != "first" {
		t.Fatalf("after the holder committed: %+v %v", c, err)
	}
	if effects(t, pool, op2.ID) != 0 || runs != 1 {
		t.Fatalf("the second effect ran (%d runs)", runs)
	}

	// A context that ends mid-effect rolls everything back.
	op3 := ledger.Op{ID: ledgertest.NewOp(t), Fingerprint: fp, Lease: time.Minute, TTL: time.Hour}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = l.OnceTx(cctx, op3, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		if _, err := tx.Exec(ctx, `INSERT INTO effects (op) VALUES ($1)`, op3.ID); err != nil {
			return nil, err
		}
		_, err := tx.Exec(ctx, `SELECT pg_sleep(2)`)
		return []byte("late"), err
	})
	if err == nil {
		t.Fatal("an effect past its context committed")
	}
	if effects(t, pool, op3.ID) != 0 {
		t.Fatal("the write of an effect past its context stayed")
	}
	ledgertest.MustGet(t, l, op3.ID, ledger.Absent)
}

// TestOnceTxFullPool: when every connection is in an effect, another
// OnceTx fails closed (ErrUnavailable, its effect not run) within the
// claim's timeout instead of waiting for a connection for its lease.
func TestOnceTxFullPool(t *testing.T) {
	setting := ledgertest.PostgresSchema(t)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(setting)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	l, err := postgres.New(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	fp := ledgertest.FP("a")
	holding, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := l.OnceTx(ctx, ledger.Op{ID: ledgertest.NewOp(t), Fingerprint: fp, Lease: time.Minute, TTL: time.Hour},
			func(context.Context, pgx.Tx) ([]byte, error) { close(holding); <-release; return nil, nil })
		done <- err
	}()
	<-holding
	t0 := time.Now()
	ran := false
	_, err = l.OnceTx(ctx, ledger.Op{ID: ledgertest.NewOp(t), Fingerprint: fp, Lease: time.Minute, TTL: time.Hour},
		func(context.Context, pgx.Tx) ([]byte, error) { ran = true; return nil, nil })
	if !errors.Is(err, ledger.ErrUnavailable) || ran {
		t.Fatalf("with the pool full: %v (ran %v)", err, ran)
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Fatalf("waited %v for a connection", d)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
