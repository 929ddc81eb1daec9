package host_test

// Tests of Guard.OnceTx against the real guard and a real PostgreSQL
// (the shared one, in a schema of their own; skipped without it unless
// MRTR_REQUIRE_SERVICES=1).

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/ledgertest"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/postgres"
)

// oncePostgres opens the PostgreSQL ledger in a schema of its own, with
// a table the effects write to, and a pool on the same schema to look.
func oncePostgres(t testing.TB) (*postgres.Ledger, *pgxpool.Pool) {
	t.Helper()
	setting := ledgertest.PostgresSchema(t)
	pl := ledgertest.OpenPostgresAt(t, setting).(*postgres.Ledger)
	pool, err := pgxpool.New(context.Background(), setting)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(context.Background(), `CREATE TABLE effects (op text PRIMARY KEY, n int NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return pl, pool
}

// txEffect writes a row for op through tx and answers with its run number.
func txEffect(n *int32, mu *sync.Mutex, op string) postgres.Effect {
	return func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		mu.Lock()
		*n++
		k := *n
		mu.Unlock()
		if _, err := tx.Exec(ctx, `INSERT INTO effects (op, n) VALUES ($1, $2)`, op, k); err != nil {
			return nil, err
		}
		return []byte(`{"booked":` + strconv.Itoa(int(k)) + `}`), nil
	}
}

func effectRows(t testing.TB, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM effects`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestOnceTx(t *testing.T) {
	ctx := context.Background()
	pl, pool := oncePostgres(t)
	g := onceGuard(t, host.NewKeyring(), host.WithEngine(host.EngineNative), host.WithLedger(pl))
	req := onceAsk(t, g, onceAnswer)
	o := onceResume(t, g, req)
	var n int32
	var mu sync.Mutex

	// The effect fails: nothing stays, neither its write nor the claim.
	boom := errors.New("the CRM refused")
	_, _, err := g.OnceTx(ctx, o, pl.Tx(func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		if _, err := tx.Exec(ctx, `INSERT INTO effects (op, n) VALUES ($1, 0)`, o.OperationID); err != nil {
			return nil, err
		}
		return nil, boom
	}))
	if !errors.Is(err, boom) {
		t.Fatalf("the effect's error came back as %v", err)
	}
	if rows := effectRows(t, pool); rows != 0 {
		t.Fatalf("a failed effect left %d rows", rows)
	}
	ledgertest.MustGet(t, pl, o.OperationID, ledger.Absent)

	res, replay, err := g.OnceTx(ctx, o, pl.Tx(txEffect(&n, &mu, o.OperationID)))
	if err != nil || replay || string(res) != `{"booked":1}` {
		t.Fatalf("first: %s %v %v", res, replay, err)
	}
	if e := ledgertest.MustGet(t, pl, o.OperationID, ledger.Done); !bytes.Equal(e.Result, res) {
		t.Fatalf("stored %q", e.Result)
	}
	// Replays get the stored result through OnceTx and through Once alike.
	res2, replay, err := g.OnceTx(ctx, onceResume(t, g, req), pl.Tx(txEffect(&n, &mu, o.OperationID)))
	if err != nil || !replay || !bytes.Equal(res2, res) {
		t.Fatalf("replay: %s %v %v", res2, replay, err)
	}
	res3, replay, err := g.Once(ctx, onceResume(t, g, req), func(context.Context) ([]byte, error) { return nil, errors.New("ran") })
	if err != nil || !replay || !bytes.Equal(res3, res) {
		t.Fatalf("replay through Once: %s %v %v", res3, replay, err)
	}
	other := *req
	other.InputResponses = []byte(onceOtherAnswer)
	_, _, err = g.OnceTx(ctx, onceResume(t, g, &other), pl.Tx(txEffect(&n, &mu, o.OperationID)))
	onceCode(t, err, host.CodeConflict)
	if n != 1 || effectRows(t, pool) != 1 {
		t.Fatalf("%d runs, %d rows", n, effectRows(t, pool))
	}

	// A closed ledger fails closed, retryable, and runs nothing.
	o2 := onceResume(t, g, onceAsk(t, g, onceAnswer))
	_ = pl.Close()
	_, _, err = g.OnceTx(ctx, o2, pl.Tx(txEffect(&n, &mu, o2.OperationID)))
	if e := onceCode(t, err, host.CodeLedgerUnavailable); e.Reason != "closed" {
		t.Fatalf("reason %q", e.Reason)
	}
	if n != 1 {
		t.Fatal("the effect ran on a closed ledger")
	}
}

// TestOnceTxConcurrent: duplicates of one outcome at once, on two guards
// sharing the ledger: the first's transaction holds the operation, the
// others wait on its row lock and then replay its result.
func TestOnceTxConcurrent(t *testing.T) {
	ctx := context.Background()
	pl, pool := oncePostgres(t)
	keys := host.NewKeyring()
	gs := []*host.Guard{
		onceGuard(t, keys, host.WithEngine(host.EngineNative), host.WithLedger(pl)),
		onceGuard(t, keys, host.WithEngine(host.EngineNative), host.WithLedger(pl)),
	}
	o := onceResume(t, gs[0], onceAsk(t, gs[0], onceAnswer))
	var n int32
	var mu sync.Mutex
	slow := func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		time.Sleep(300 * time.Millisecond) // longer than the claim's lock wait
		return txEffect(&n, &mu, o.OperationID)(ctx, tx)
	}
	const dups = 8
	results := make([][]byte, dups)
	replays := make([]bool, dups)
	var wg sync.WaitGroup
	for i := 0; i < dups; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			results[i], replays[i], err = gs[i%2].OnceTx(ctx, o, pl.Tx(slow))
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	fresh := 0
	for i := range results {
		if !bytes.Equal(results[i], []byte(`{"booked":1}`)) {
			t.Fatalf("duplicate %d got %s", i, results[i])
		}
		if !replays[i] {
			fresh++
		}
	}
	if fresh != 1 || n != 1 || effectRows(t, pool) != 1 {
		t.Fatalf("%d fresh results, %d runs, %d rows", fresh, n, effectRows(t, pool))
	}
}
