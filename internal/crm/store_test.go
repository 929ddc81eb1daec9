package crm

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/testenv"
)

// TestStore runs one suite against both backends. PostgreSQL must answer
// at 127.0.0.1:5432 (or MRTR_TEST_POSTGRES): the test fails, never skips,
// without it.
func TestStore(t *testing.T) {
	for _, b := range []struct {
		name  string
		fresh func(t *testing.T) string
	}{{"sqlite", freshSQLite}, {"postgres", freshPostgres}} {
		t.Run(b.name, func(t *testing.T) { testStore(t, b.fresh) })
	}
}

// freshSQLite names a new SQLite file.
func freshSQLite(t *testing.T) string {
	return "sqlite:" + filepath.Join(t.TempDir(), "crm.db")
}

// freshPostgres makes a schema of its own for the test, returns a setting
// whose search_path points at it, and drops it when the test ends.
func freshPostgres(t *testing.T) string {
	t.Helper()
	testenv.Require(t, testenv.Postgres)
	base := testenv.PostgresURL()
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("the test PostgreSQL URL: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		admin.Close()
		t.Fatalf("PostgreSQL accepts connections but does not answer (want trust auth and a database test): %v", err)
	}
	var b [8]byte
	rand.Read(b[:])
	schema := "crm_test_" + hex.EncodeToString(b[:])
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		t.Fatalf("creating the test schema: %v", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("dropping %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func open(t *testing.T, setting string) *Store {
	t.Helper()
	s, err := Open(context.Background(), setting)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testStore(t *testing.T, fresh func(t *testing.T) string) {
	ctx := context.Background()

	t.Run("bookings survive a reopen, one per operation", func(t *testing.T) {
		setting := fresh(t)
		s := open(t, setting)
		before := time.Now().UTC().Truncate(time.Millisecond)
		b, err := s.AddBooking(ctx, Booking{Principal: "alice", OperationID: "op1", Name: "A", Email: "a@example.com", Topic: "t", Slot: "2026-12-01T15:00:00Z"})
		if err != nil || !strings.HasPrefix(b.ID, "bk_") || b.CreatedAt.Before(before) {
			t.Fatalf("AddBooking: %+v %v", b, err)
		}
		if again, err := s.AddBooking(ctx, Booking{Principal: "alice", OperationID: "op1", Name: "other"}); err != nil || again.ID != b.ID || again.Name != "A" {
			t.Fatalf("a second booking for one operation must return the first: %+v %v", again, err)
		}
		if _, err := s.AddBooking(ctx, Booking{Principal: "bob", OperationID: "op1", Name: "B"}); !errors.Is(err, ErrDuplicate) {
			t.Fatalf("another principal's booking for the same operation: %v", err)
		}
		if _, err := s.AddBooking(ctx, Booking{Principal: "alice"}); err == nil || errors.Is(err, ErrDuplicate) {
			t.Fatalf("a booking without an operation id: %v", err)
		}
		// One millisecond later: ties in created_ms order by the random id.
		s.now = func() time.Time { return b.CreatedAt.Add(time.Millisecond) }
		b2, err := s.AddBooking(ctx, Booking{Principal: "alice", OperationID: "op2", Name: "A2", Email: "a2@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if bs, err := s.ListBookings(ctx, "bob"); err != nil || len(bs) != 0 {
			t.Fatalf("bob sees %v %v", bs, err)
		}
		s.Close()

		s = open(t, setting)
		defer s.Close()
		bs, err := s.ListBookings(ctx, "alice")
		if err != nil || len(bs) != 2 {
			t.Fatalf("after reopen: %+v %v", bs, err)
		}
		got := bs[0]
		if got.ID != b.ID || got.Email != "a@example.com" || got.Slot != b.Slot || got.Topic != "t" || got.OperationID != "op1" ||
			got.Principal != "alice" || !got.CreatedAt.Equal(b.CreatedAt) || bs[1].ID != b2.ID {
			t.Fatalf("after reopen: %+v, want %+v then %s", bs, b, b2.ID)
		}
		if n := countRows(t, s, "bookings"); n != 2 {
			t.Fatalf("%d bookings, want 2", n)
		}
	})

	t.Run("connect sessions", func(t *testing.T) {
		s := open(t, fresh(t))
		defer s.Close()
		id, err := s.NewConnect(ctx, "alice", time.Minute)
		if err != nil || len(id) < 40 {
			t.Fatalf("NewConnect: %q %v", id, err)
		}
		if c, err := s.Connect(ctx, id); err != nil || c.Principal != "alice" || c.Completed || !c.ExpiresAt.After(time.Now()) {
			t.Fatalf("Connect: %+v %v", c, err)
		}
		if _, err := s.Connect(ctx, id+"x"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Connect of an unknown id: %v", err)
		}
		if err := s.CompleteConnect(ctx, id, "bob", "k"); !errors.Is(err, ErrPrincipal) {
			t.Fatalf("bob completing alice's link: %v", err)
		}
		if hasCalendarKey(t, s, "bob") {
			t.Fatal("a refused link stored a key")
		}
		if err := s.CompleteConnect(ctx, id+"x", "alice", "k"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("edited id: %v", err)
		}
		if hasCalendarKey(t, s, "alice") {
			t.Fatal("a key before the link was completed")
		}
		if err := s.CompleteConnect(ctx, id, "alice", "the-key"); err != nil {
			t.Fatal(err)
		}
		if !hasCalendarKey(t, s, "alice") {
			t.Fatal("no calendar key for alice")
		}
		if !calendarKeyIs(t, s, "alice", "the-key") {
			t.Fatal("the key was not stored")
		}
		if calendarKeyIs(t, s, "alice", "the-kez") {
			t.Fatal("another key matches")
		}
		if c, _ := s.Connect(ctx, id); !c.Completed {
			t.Fatal("the session is not marked completed")
		}
		if err := s.CompleteConnect(ctx, id, "alice", "other"); !errors.Is(err, ErrUsed) {
			t.Fatalf("reuse: %v", err)
		}
		if !calendarKeyIs(t, s, "alice", "the-key") {
			t.Fatal("a refused reuse replaced the key")
		}
		// A second link replaces the key (upsert).
		id2, _ := s.NewConnect(ctx, "alice", time.Minute)
		if err := s.CompleteConnect(ctx, id2, "alice", "new-key"); err != nil {
			t.Fatal(err)
		}
		if !calendarKeyIs(t, s, "alice", "new-key") {
			t.Fatal("the second link did not replace the key")
		}
		old, _ := s.NewConnect(ctx, "alice", time.Minute)
		s.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
		if err := s.CompleteConnect(ctx, old, "alice", "k"); !errors.Is(err, ErrExpired) {
			t.Fatalf("expired: %v", err)
		}
		if !calendarKeyIs(t, s, "alice", "new-key") {
			t.Fatal("an expired link changed the key")
		}
	})

	t.Run("expired connect sessions are deleted", func(t *testing.T) {
		s := open(t, fresh(t))
		defer s.Close()
		t0 := time.Now()
		s.now = func() time.Time { return t0 }
		short, _ := s.NewConnect(ctx, "alice", time.Minute)
		long, _ := s.NewConnect(ctx, "bob", time.Hour)
		used, _ := s.NewConnect(ctx, "carol", time.Minute)
		if err := s.CompleteConnect(ctx, used, "carol", "k"); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, s, "connect_sessions"); n != 3 {
			t.Fatalf("%d sessions, want 3", n)
		}
		s.now = func() time.Time { return t0.Add(2 * time.Minute) }
		live, err := s.NewConnect(ctx, "alice", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{short, used} {
			if _, err := s.Connect(ctx, id); !errors.Is(err, ErrNotFound) {
				t.Errorf("an expired session is still there: %v", err)
			}
		}
		for _, id := range []string{long, live} {
			if _, err := s.Connect(ctx, id); err != nil {
				t.Errorf("a live session was deleted: %v", err)
			}
		}
		if n := countRows(t, s, "connect_sessions"); n != 2 {
			t.Fatalf("%d sessions, want the 2 live ones", n)
		}
		if !calendarKeyIs(t, s, "carol", "k") {
			t.Fatal("deleting a used session deleted its key")
		}
	})

	// The UNIQUE constraint is the last line behind the ledger: many
	// writers for one operation, exactly one row.
	t.Run("concurrent bookings for one operation", func(t *testing.T) {
		setting := fresh(t)
		stores := []*Store{open(t, setting), open(t, setting)}
		defer stores[0].Close()
		defer stores[1].Close()
		const n = 40
		var wg sync.WaitGroup
		errs := make([]error, n)
		ids := make([]string, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var b Booking
				b, errs[i] = stores[i%2].AddBooking(ctx, Booking{Principal: "alice", OperationID: "op-race", Name: fmt.Sprint(i)})
				ids[i] = b.ID
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil || ids[i] != ids[0] {
				t.Errorf("writer %d: %q %v, want the one booking %q", i, ids[i], err, ids[0])
			}
		}
		if c := countRows(t, stores[0], "bookings"); c != 1 {
			t.Fatalf("%d rows exist, want 1", c)
		}
	})

	t.Run("concurrent completions of one link", func(t *testing.T) {
		setting := fresh(t)
		stores := []*Store{open(t, setting), open(t, setting)}
		defer stores[0].Close()
		defer stores[1].Close()
		id, err := stores[0].NewConnect(ctx, "alice", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		const n = 20
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = stores[i%2].CompleteConnect(ctx, id, "alice", fmt.Sprintf("key-%d", i))
			}()
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("the link was used twice: by %d and %d", winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, ErrUsed):
				t.Errorf("completion %d: %v", i, err)
			}
		}
		if winner < 0 {
			t.Fatal("no completion succeeded")
		}
		if !calendarKeyIs(t, stores[1], "alice", fmt.Sprintf("key-%d", winner)) {
			t.Fatal("the stored key is not the winner's")
		}
	})

	t.Run("instances starting at once", func(t *testing.T) {
		setting := fresh(t)
		const n = 6
		var wg sync.WaitGroup
		stores := make([]*Store, n)
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				stores[i], errs[i] = Open(ctx, setting)
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("instance %d: %v", i, err)
			}
			defer stores[i].Close()
		}
		var rows, version int
		if err := stores[0].db.QueryRowContext(ctx, `SELECT COUNT(*), MAX(version) FROM crm_schema`).Scan(&rows, &version); err != nil {
			t.Fatal(err)
		}
		if rows != len(migrations) || version != len(migrations) {
			t.Fatalf("crm_schema has %d rows up to version %d, want %d", rows, version, len(migrations))
		}
		if _, err := stores[n-1].AddBooking(ctx, Booking{Principal: "p", OperationID: "op"}); err != nil {
			t.Fatal(err)
		}
	})
}

// A database made before crm_schema existed (the first SQLite release)
// opens, keeps its rows and gets its version recorded.
func TestSQLiteUnversionedDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "crm.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range migrations[0] {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO bookings VALUES ('bk_1','alice','A','a@example.com','','','op1','2026-01-01T00:00:00Z',1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s := open(t, "sqlite:"+path)
	defer s.Close()
	if bs, err := s.ListBookings(ctx, "alice"); err != nil || len(bs) != 1 || bs[0].ID != "bk_1" {
		t.Fatalf("old rows: %+v %v", bs, err)
	}
	var v int
	if err := s.db.QueryRow(`SELECT MAX(version) FROM crm_schema`).Scan(&v); err != nil || v != len(migrations) {
		t.Fatalf("version %d %v", v, err)
	}
}

func TestSQLiteFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// A directory setting means DIR/crm.db, created private.
	s := open(t, "sqlite:"+dir)
	defer s.Close()
	if fi, err := os.Stat(filepath.Join(dir, "crm.db")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the database file was not created private: %v %v", fi, err)
	}
	if s.Where != "sqlite:"+filepath.Join(dir, "crm.db") {
		t.Fatalf("Where %q", s.Where)
	}
	if _, err := Open(context.Background(), "mysql://x"); err == nil {
		t.Fatal("an unknown setting opened")
	}
}

// The DSN's password never reaches Where (which serve logs) or an error.
func TestPostgresSettingHidesPassword(t *testing.T) {
	ctx := context.Background()
	const pw = "hunter2-pw-marker"
	for _, bad := range []string{
		"postgres://u:" + pw + "@%zz:5432/test",                           // does not parse
		"postgresql://u:" + pw + "@127.0.0.1:5432/test?sslmode=bogus",     // bad setting
		"postgres://postgres:" + pw + "@127.0.0.1:1/test?sslmode=disable", // nobody listens
	} {
		s, err := Open(ctx, bad)
		if err == nil {
			s.Close()
			t.Fatalf("%s opened", bad)
		}
		if strings.Contains(err.Error(), pw) {
			t.Fatalf("the error repeats the password: %v", err)
		}
	}

	// Trust auth ignores the password, so this one opens.
	fresh := freshPostgres(t)
	u, _ := url.Parse(fresh)
	u.User = url.UserPassword(u.User.Username(), pw)
	u.Scheme = "postgresql"
	u.RawQuery += "&connect_timeout=5&application_name=mrtr-test"
	s := open(t, u.String())
	defer s.Close()
	want := "postgres://" + u.User.Username() + "@" + u.Host + "/test?search_path=" + u.Query().Get("search_path")
	if s.Where != want {
		t.Fatalf("Where %q, want %q", s.Where, want)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}
