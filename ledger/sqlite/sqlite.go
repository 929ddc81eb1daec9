package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver

	"github.com/mrtr-wasm/mrtr-wasm/internal/privatefile"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/internal/opcheck"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/internal/row"
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

func init() {
	ledger.Register(func(ctx context.Context, setting string, _ ledger.Options) (ledger.Ledger, error) {
		_, rest, _ := strings.Cut(setting, ":")
		path := strings.TrimPrefix(rest, "//")
		if path == "" {
			return nil, errors.New("ledger: sqlite: needs a file path, as in sqlite:/var/lib/mrtr/ledger.db")
		}
		return Open(ctx, path)
	}, "sqlite", "file")
}

// Open opens (and on first use creates) the ledger file at path, making
// it and its -wal and -shm files mode 0600 (an existing looser file is
// tightened).
func Open(ctx context.Context, path string) (ledger.Ledger, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("ledger: sqlite: %w", err)
		}
	}
	// The results it holds are nobody else's business.
	if err := privatefile.SQLite(path); err != nil {
		return nil, fmt.Errorf("ledger: sqlite: %w", err)
	}
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

func (s *sqliteLedger) Claim(ctx context.Context, op string, fp ledger.Fingerprint, lease time.Duration) (ledger.Claim, error) {
	if err := opcheck.Op(op); err != nil {
		return ledger.Claim{}, err
	}
	if err := ctx.Err(); err != nil {
		return ledger.Claim{}, err
	}
	if s.closed.Load() {
		return ledger.Claim{}, ledger.ErrClosed
	}
	token := opcheck.NewToken()
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
			WHERE mrtr_ledger.expires <= ?5`, op, token, fp[:], now+opcheck.Ms(lease), now)
		if err != nil {
			return ledger.Claim{}, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return ledger.Claim{}, err
		} else if n == 1 {
			return ledger.Claim{Status: ledger.Acquired, Token: token}, nil
		}
		// Someone else's live row appeared in between: read it.
		if attempt >= 3 {
			return ledger.Claim{Status: ledger.InProgress}, nil
		}
	}
}

// lookup classifies op's live row, if there is one.
func (s *sqliteLedger) lookup(ctx context.Context, op string, fp ledger.Fingerprint) (ledger.Claim, bool, error) {
	e, err := s.entry(ctx, op)
	if err != nil {
		return ledger.Claim{}, false, err
	}
	c, found := row.Claim(e, fp)
	return c, found, nil
}

func (s *sqliteLedger) Finish(ctx context.Context, op, token string, fp ledger.Fingerprint, result []byte, ttl time.Duration) error {
	if err := opcheck.Finish(ctx, op, token); err != nil {
		return err
	}
	if s.closed.Load() {
		return ledger.ErrClosed
	}
	now := nowMs()
	res, err := s.db.ExecContext(ctx, `INSERT INTO mrtr_ledger(op, done, token, fp, result, expires)
		VALUES(?1, 1, ?2, ?3, ?4, ?5)
		ON CONFLICT(op) DO UPDATE SET done = 1, token = excluded.token, fp = excluded.fp,
			result = excluded.result, expires = excluded.expires
		WHERE mrtr_ledger.token = excluded.token OR mrtr_ledger.expires <= ?6`,
		op, token, fp[:], opcheck.Clone(result), now+opcheck.Ms(ttl), now)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != 1 {
		return ledger.ErrLost
	}
	return nil
}

func (s *sqliteLedger) Release(ctx context.Context, op, token string) error {
	if err := opcheck.Op(op); err != nil {
		return err
	}
	if s.closed.Load() {
		return ledger.ErrClosed
	}
	_, err := s.db.ExecContext(ctx, `DELETE FROM mrtr_ledger WHERE op = ?1 AND token = ?2 AND done = 0`, op, token)
	return err
}

func (s *sqliteLedger) Get(ctx context.Context, op string) (ledger.Entry, error) {
	if err := opcheck.Op(op); err != nil {
		return ledger.Entry{}, err
	}
	if s.closed.Load() {
		return ledger.Entry{}, ledger.ErrClosed
	}
	return s.entry(ctx, op)
}

// entry reads op's live row (ledger.Absent when there is none).
func (s *sqliteLedger) entry(ctx context.Context, op string) (ledger.Entry, error) {
	var (
		done   bool
		fp     []byte
		result []byte
	)
	err := s.db.QueryRowContext(ctx, `SELECT done, fp, result FROM mrtr_ledger WHERE op = ?1 AND expires > ?2`, op, nowMs()).
		Scan(&done, &fp, &result)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Entry{}, nil
	}
	if err != nil {
		return ledger.Entry{}, err
	}
	return row.Entry(done, fp, result), nil
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
		return ledger.ErrClosed
	}
	return s.db.PingContext(ctx)
}

func (s *sqliteLedger) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.db.Close()
}
