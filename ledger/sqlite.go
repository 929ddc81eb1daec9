package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver
)

// sqliteLedger keeps the ledger in one SQLite file. Each call is one
// autocommit statement, so it is atomic against every other connection,
// in this process or another, that shares the file.
//
// Durability: WAL journal with synchronous=FULL, so every commit (the
// claim, then the finish) is fsynced before the call returns, and a
// result reported done survives a crash of the process or of the
// machine. (WAL with NORMAL survives a process crash but may lose the
// last commits on power loss: too weak for "reported done".)
type sqliteLedger struct {
	db        *sql.DB
	lastSweep atomic.Int64 // unix ms
	closed    atomic.Bool
}

const sqliteSchema = `CREATE TABLE IF NOT EXISTS mrtr_ledger (
	op      TEXT PRIMARY KEY,
	done    INTEGER NOT NULL,
	token   TEXT NOT NULL,
	fp      BLOB NOT NULL,
	result  BLOB,
	expires INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mrtr_ledger_expires ON mrtr_ledger(expires);`

// sweepEvery bounds how often expired rows are deleted.
const sweepEvery = time.Minute

// OpenSQLite opens (and on first use creates, mode 0600) the ledger file
// at path.
func OpenSQLite(ctx context.Context, path string) (Ledger, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("ledger: sqlite: %w", err)
		}
	}
	// Create the file ourselves so the results it will hold are not
	// world-readable.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ledger: sqlite: %w", err)
	}
	_ = f.Close()
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("ledger: sqlite: %w", err)
	}
	// One connection: writers in this process queue in Go (cheap, honours
	// contexts) instead of in SQLite's busy handler, which sleeps in
	// steps of up to 100 ms. Other processes still meet the busy handler.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	if _, err := db.ExecContext(ctx, sqliteSchema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("ledger: sqlite: creating the table: %w", err)
	}
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		_ = db.Close()
		return nil, fmt.Errorf("ledger: sqlite: the file is not in WAL mode (%q, %v)", mode, err)
	}
	return &sqliteLedger{db: db}, nil
}

func nowMs() int64 { return time.Now().UnixMilli() }

func (s *sqliteLedger) Claim(ctx context.Context, op string, fp Fingerprint, lease time.Duration) (Claim, error) {
	if err := checkOp(op); err != nil {
		return Claim{}, err
	}
	if err := ctx.Err(); err != nil {
		return Claim{}, err
	}
	if s.closed.Load() {
		return Claim{}, ErrClosed
	}
	token := newToken()
	for attempt := 0; ; attempt++ {
		// Read first: a replay or a duplicate needs no write lock.
		c, found, err := s.lookup(ctx, op, fp)
		if err != nil || found {
			return c, err
		}
		now := nowMs()
		s.sweep(ctx, now)
		// Insert, or take over an expired row; a live row is left alone.
		res, err := s.db.ExecContext(ctx, `INSERT INTO mrtr_ledger(op, done, token, fp, result, expires)
			VALUES(?1, 0, ?2, ?3, NULL, ?4)
			ON CONFLICT(op) DO UPDATE SET done = 0, token = excluded.token, fp = excluded.fp,
				result = NULL, expires = excluded.expires
			WHERE mrtr_ledger.expires <= ?5`, op, token, fp[:], now+ms(lease), now)
		if err != nil {
			return Claim{}, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return Claim{}, err
		} else if n == 1 {
			return Claim{Status: Acquired, Token: token}, nil
		}
		// Someone else's live row appeared in between: read it.
		if attempt >= 3 {
			return Claim{Status: InProgress}, nil
		}
	}
}

// lookup classifies op's live row, if there is one.
func (s *sqliteLedger) lookup(ctx context.Context, op string, fp Fingerprint) (Claim, bool, error) {
	e, err := s.entry(ctx, op)
	switch {
	case err != nil:
		return Claim{}, false, err
	case e.State == Absent:
		return Claim{}, false, nil
	case e.Fingerprint != fp:
		return Claim{Status: Conflict}, true, nil
	case e.State == Done:
		return Claim{Status: Finished, Result: e.Result}, true, nil
	}
	return Claim{Status: InProgress}, true, nil
}

func (s *sqliteLedger) Finish(ctx context.Context, op, token string, fp Fingerprint, result []byte, ttl time.Duration) error {
	if err := checkFinish(ctx, op, token); err != nil {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	now := nowMs()
	res, err := s.db.ExecContext(ctx, `INSERT INTO mrtr_ledger(op, done, token, fp, result, expires)
		VALUES(?1, 1, ?2, ?3, ?4, ?5)
		ON CONFLICT(op) DO UPDATE SET done = 1, token = excluded.token, fp = excluded.fp,
			result = excluded.result, expires = excluded.expires
		WHERE mrtr_ledger.token = excluded.token OR mrtr_ledger.expires <= ?6`,
		op, token, fp[:], clone(result), now+ms(ttl), now)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != 1 {
		return ErrLost
	}
	return nil
}

func (s *sqliteLedger) Release(ctx context.Context, op, token string) error {
	if err := checkOp(op); err != nil {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	_, err := s.db.ExecContext(ctx, `DELETE FROM mrtr_ledger WHERE op = ?1 AND token = ?2 AND done = 0`, op, token)
	return err
}

func (s *sqliteLedger) Get(ctx context.Context, op string) (Entry, error) {
	if err := checkOp(op); err != nil {
		return Entry{}, err
	}
	if s.closed.Load() {
		return Entry{}, ErrClosed
	}
	return s.entry(ctx, op)
}

// entry reads op's live row (Absent when there is none).
func (s *sqliteLedger) entry(ctx context.Context, op string) (Entry, error) {
	var (
		done   bool
		fp     []byte
		result []byte
	)
	err := s.db.QueryRowContext(ctx, `SELECT done, fp, result FROM mrtr_ledger WHERE op = ?1 AND expires > ?2`, op, nowMs()).
		Scan(&done, &fp, &result)
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, nil
	}
	if err != nil {
		return Entry{}, err
	}
	e := Entry{State: Pending}
	copy(e.Fingerprint[:], fp)
	if done {
		e.State, e.Result = Done, clone(result)
	}
	return e, nil
}

// sweep deletes expired rows, at most once per sweepEvery per process.
func (s *sqliteLedger) sweep(ctx context.Context, now int64) {
	last := s.lastSweep.Load()
	if now-last < sweepEvery.Milliseconds() || !s.lastSweep.CompareAndSwap(last, now) {
		return
	}
	_, _ = s.db.ExecContext(ctx, `DELETE FROM mrtr_ledger WHERE expires <= ?1`, now)
}

func (s *sqliteLedger) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return s.db.PingContext(ctx)
}

func (s *sqliteLedger) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.db.Close()
}
