package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/ledgertest"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/postgres"
)

// TestRestart: a private PostgreSQL killed with SIGKILL and restarted.
// While it is away every call fails (closed: no claim is taken); once it
// is back the same Ledger works again (OnceTx too), and what was finished before the
// kill is still finished.
func TestRestart(t *testing.T) {
	p := ledgertest.StartPostgres(t)
	l := ledgertest.OpenPostgresAt(t, p.URL)
	ctx := context.Background()
	fp := ledgertest.FP("a")
	done := ledgertest.NewOp(t)
	c := ledgertest.MustClaim(t, l, done, fp, time.Minute, ledger.Acquired)
	if err := l.Finish(ctx, done, c.Token, fp, []byte("kept"), time.Hour); err != nil {
		t.Fatal(err)
	}
	p.Kill(t)
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if c, err := l.Claim(cctx, ledgertest.NewOp(t), fp, time.Minute); err == nil {
		t.Fatalf("a claim succeeded while PostgreSQL was down: %v", c.Status)
	}
	if err := l.Ping(cctx); err == nil {
		t.Fatal("Ping succeeded while PostgreSQL was down")
	}
	ran := false
	_, err := l.(*postgres.Ledger).OnceTx(cctx, ledger.Op{ID: ledgertest.NewOp(t), Fingerprint: fp, Lease: time.Minute, TTL: time.Hour},
		func(context.Context, pgx.Tx) ([]byte, error) { ran = true; return nil, nil })
	if !errors.Is(err, ledger.ErrUnavailable) || ran {
		t.Fatalf("OnceTx while PostgreSQL was down: %v (effect ran: %v)", err, ran)
	}
	p.Start(t)
	// The pool may still hold a dead connection or two: they fail once.
	for try := 0; try < 20; try++ {
		if err = l.Ping(ctx); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the ledger did not recover: %v", err)
	}
	if got := ledgertest.MustClaim(t, l, done, fp, time.Minute, ledger.Finished); string(got.Result) != "kept" {
		t.Fatalf("after the restart: %q", got.Result)
	}
}
