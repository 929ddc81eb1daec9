package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/ledgertest"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/postgres"
)

// The contract, on a real PostgreSQL (skipped without one, unless
// MRTR_REQUIRE_SERVICES=1), in a schema of its own. PostgreSQL keeps the
// time: the timed checks poll.
func TestContract(t *testing.T) {
	setting := ledgertest.PostgresSchema(t)
	ledgertest.Contract(t, ledgertest.Wall, func(t *testing.T) ledger.Ledger { return ledgertest.OpenPostgresAt(t, setting) })
}

// Instances starting at once on a new schema take turns creating the
// table (CREATE TABLE IF NOT EXISTS alone races), and share it after.
func TestConcurrentFirstStart(t *testing.T) {
	setting := ledgertest.PostgresSchema(t)
	const n = 8
	ls := make([]ledger.Ledger, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ls[i], errs[i] = ledger.Open(context.Background(), setting)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		defer ls[i].Close()
	}
	op, fp := ledgertest.NewOp(t), ledgertest.FP("a")
	ledgertest.MustClaim(t, ls[0], op, fp, time.Minute, ledger.Acquired)
	ledgertest.MustClaim(t, ls[n-1], op, fp, time.Minute, ledger.InProgress)
	if w := ls[0].(*postgres.Ledger).Where(); !strings.Contains(w, "search_path=mrtr_test_") {
		t.Fatalf("Where %q does not name the schema", w)
	}
}

func TestOpenSettingsHideThePassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range []string{
		"postgres://user:hunter2@%zz:5432/db",                  // does not parse
		"postgres://user:hunter2@127.0.0.1:1/db?sslmode=bogus", // bad option
		"postgres://user:hunter2@127.0.0.1:1/db",               // nothing listens
	} {
		_, err := ledger.Open(ctx, s)
		if err == nil {
			t.Fatalf("%q opened", s)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("the error shows the password: %v", err)
		}
	}
}
