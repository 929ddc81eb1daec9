package ledgertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mrtr-wasm/mrtr-wasm/internal/testenv"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
)

// PostgresSchema creates a schema of its own in the PostgreSQL at
// testenv.PostgresURL, drops it (with everything in it) afterwards, and
// returns a URL whose search_path is that schema. Without PostgreSQL it
// skips t (fails it under MRTR_REQUIRE_SERVICES=1).
func PostgresSchema(t testing.TB) string {
	t.Helper()
	testenv.Require(t, testenv.Postgres)
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "mrtr_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testenv.PostgresURL())
	if err != nil {
		t.Fatalf("PostgreSQL accepts connections but pgx cannot connect: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, testenv.PostgresURL())
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return WithSearchPath(t, testenv.PostgresURL(), schema)
}

// WithSearchPath returns setting with its search_path set to schema.
func WithSearchPath(t testing.TB, setting, schema string) string {
	t.Helper()
	u, err := url.Parse(setting)
	if err != nil {
		t.Fatal("the PostgreSQL URL does not parse")
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// OpenPostgres opens the PostgreSQL ledger (the caller links
// ledger/postgres) in a schema of its own (see PostgresSchema).
func OpenPostgres(t testing.TB) ledger.Ledger {
	t.Helper()
	return OpenPostgresAt(t, PostgresSchema(t))
}

// OpenPostgresAt opens the PostgreSQL ledger at setting and closes it
// afterwards.
func OpenPostgresAt(t testing.TB, setting string) ledger.Ledger {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := ledger.Open(ctx, setting)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}
