package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mrtr-wasm/mrtr-wasm/internal/pgconf"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/internal/opcheck"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/internal/row"
)

// Ledger keeps the ledger in one PostgreSQL table. Each ledger.Ledger
// call is one autocommit statement (two when a claim finds a row), so it
// is atomic against every other instance that shares the table. Times are
// PostgreSQL's (statement_timestamp()), one clock for every instance.
//
// A claim inserts a pending row; Finish turns it into a done row with the
// result; Release deletes it. A row whose expires has passed counts as
// absent and is taken over by the next claim; expired rows are deleted
// now and then (at most once a minute per process, 1000 at a time).
type Ledger struct {
	pool      *pgxpool.Pool
	owned     bool
	where     string
	lastSweep atomic.Int64 // unix ms
	closed    atomic.Bool
}

// migrationLock is the key of the transaction-scoped advisory lock that
// serialises creating the table between instances starting at once
// (CREATE TABLE IF NOT EXISTS alone races in PostgreSQL). It reads
// "mrtr-led" in ASCII.
const migrationLock int64 = 0x6d7274722d6c6564

var schema = []string{
	`CREATE TABLE IF NOT EXISTS mrtr_ledger (
		op      text PRIMARY KEY,
		done    boolean NOT NULL,
		token   text NOT NULL,
		fp      bytea NOT NULL,
		result  bytea,
		expires timestamptz NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS mrtr_ledger_expires ON mrtr_ledger (expires)`,
}

// claimSQL inserts a pending row, or takes over an expired one; a live
// row is left alone (no row affected). $4 is the lease in ms.
const claimSQL = `INSERT INTO mrtr_ledger AS l (op, done, token, fp, result, expires)
	VALUES ($1, false, $2, $3, NULL, statement_timestamp() + $4::bigint * interval '1 millisecond')
	ON CONFLICT (op) DO UPDATE SET done = false, token = excluded.token, fp = excluded.fp,
		result = NULL, expires = excluded.expires
	WHERE l.expires <= statement_timestamp()`

const entrySQL = `SELECT done, fp, result FROM mrtr_ledger WHERE op = $1 AND expires > statement_timestamp()`

// sweepEvery bounds how often expired rows are deleted.
const sweepEvery = time.Minute

// claimLockTimeout bounds how long OnceTx's claim waits for another
// transaction that holds the same operation; then it answers InProgress
// and host.Guard.OnceTx asks again until its wait runs out.
const claimLockTimeout = "200ms"

func init() {
	ledger.Register(func(ctx context.Context, setting string, _ ledger.Options) (ledger.Ledger, error) {
		return Open(ctx, setting)
	}, "postgres", "postgresql")
}

// Open connects to the database a pgx URL names (postgres://…; pool and
// search_path settings go in the query) and creates the table if it is
// missing. Errors never repeat the URL, which may hold a password.
// Unless the URL sets pool_max_conns, the pool holds at most 16
// connections: PostgreSQL's connections are costly and shared by every
// instance.
func Open(ctx context.Context, setting string) (*Ledger, error) {
	cfg, err := pgxpool.ParseConfig(setting)
	if err != nil {
		return nil, fmt.Errorf("ledger: postgres: %w", pgconf.ErrParse)
	}
	if !strings.Contains(setting, "pool_max_conns") {
		cfg.MaxConns = 16
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		// Its errors may quote the settings: say nothing of them.
		return nil, errors.New("ledger: postgres: the connection pool could not be made from the URL's settings")
	}
	l, err := New(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	l.owned = true
	return l, nil
}

// New makes a ledger on a pool the caller owns (Close leaves it open),
// creating the table if it is missing: OnceTx then runs effects on the
// caller's own database.
func New(ctx context.Context, pool *pgxpool.Pool) (*Ledger, error) {
	l := &Ledger{pool: pool, where: pgconf.Where(pool.Config().ConnConfig)}
	if err := l.migrate(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// Where names the database and search_path, never the password: two
// ledgers (or a ledger and the CRM) with the same Where share tables.
func (l *Ledger) Where() string { return l.where }

func (l *Ledger) migrate(ctx context.Context) error {
	tx, err := l.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("ledger: postgres: connecting: %w", err)
	}
	defer rollback(ctx, tx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
		return fmt.Errorf("ledger: postgres: locking the schema: %w", err)
	}
	for _, q := range schema {
		if _, err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("ledger: postgres: creating the table: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("ledger: postgres: creating the table: %w", err)
	}
	return nil
}

// rollback ends tx when it did not commit, even if ctx has ended.
func rollback(ctx context.Context, tx pgx.Tx) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = tx.Rollback(rctx)
}

// querier is a pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (l *Ledger) Claim(ctx context.Context, op string, fp ledger.Fingerprint, lease time.Duration) (ledger.Claim, error) {
	if err := opcheck.Op(op); err != nil {
		return ledger.Claim{}, err
	}
	if err := ctx.Err(); err != nil {
		return ledger.Claim{}, err
	}
	if l.closed.Load() {
		return ledger.Claim{}, ledger.ErrClosed
	}
	l.sweep(ctx)
	token := opcheck.NewToken()
	for attempt := 0; ; attempt++ {
		tag, err := l.pool.Exec(ctx, claimSQL, op, token, fp[:], opcheck.Ms(lease))
		if err != nil {
			return ledger.Claim{}, err
		}
		if tag.RowsAffected() == 1 {
			return ledger.Claim{Status: ledger.Acquired, Token: token}, nil
		}
		c, found, err := lookup(ctx, l.pool, op, fp)
		if err != nil || found {
			return c, err
		}
		// Released or expired in between: try again.
		if attempt >= 3 {
			return ledger.Claim{Status: ledger.InProgress}, nil
		}
	}
}

// lookup classifies op's live row, if there is one.
func lookup(ctx context.Context, q querier, op string, fp ledger.Fingerprint) (ledger.Claim, bool, error) {
	e, err := entry(ctx, q, op)
	if err != nil {
		return ledger.Claim{}, false, err
	}
	c, found := row.Claim(e, fp)
	return c, found, nil
}

// entry reads op's live row (ledger.Absent when there is none).
func entry(ctx context.Context, q querier, op string) (ledger.Entry, error) {
	var (
		done   bool
		fp     []byte
		result []byte
	)
	err := q.QueryRow(ctx, entrySQL, op).Scan(&done, &fp, &result)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Entry{}, nil
	}
	if err != nil {
		return ledger.Entry{}, err
	}
	return row.Entry(done, fp, result), nil
}

func (l *Ledger) Finish(ctx context.Context, op, token string, fp ledger.Fingerprint, result []byte, ttl time.Duration) error {
	if err := opcheck.Finish(ctx, op, token); err != nil {
		return err
	}
	if l.closed.Load() {
		return ledger.ErrClosed
	}
	// Held by token (or finished by it: a retried Finish), or expired:
	// record; held or finished by another claim: ErrLost.
	tag, err := l.pool.Exec(ctx, `INSERT INTO mrtr_ledger AS l (op, done, token, fp, result, expires)
		VALUES ($1, true, $2, $3, $4, statement_timestamp() + $5::bigint * interval '1 millisecond')
		ON CONFLICT (op) DO UPDATE SET done = true, token = excluded.token, fp = excluded.fp,
			result = excluded.result, expires = excluded.expires
		WHERE l.token = excluded.token OR l.expires <= statement_timestamp()`,
		op, token, fp[:], opcheck.Clone(result), opcheck.Ms(ttl))
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return ledger.ErrLost
	}
	return nil
}

func (l *Ledger) Release(ctx context.Context, op, token string) error {
	if err := opcheck.Op(op); err != nil {
		return err
	}
	if l.closed.Load() {
		return ledger.ErrClosed
	}
	_, err := l.pool.Exec(ctx, `DELETE FROM mrtr_ledger WHERE op = $1 AND token = $2 AND NOT done`, op, token)
	return err
}

func (l *Ledger) Get(ctx context.Context, op string) (ledger.Entry, error) {
	if err := opcheck.Op(op); err != nil {
		return ledger.Entry{}, err
	}
	if l.closed.Load() {
		return ledger.Entry{}, ledger.ErrClosed
	}
	return entry(ctx, l.pool, op)
}

// sweep deletes expired rows, at most once per sweepEvery per process and
// at most 1000 at a time, so no claim waits long behind it.
func (l *Ledger) sweep(ctx context.Context) {
	now := time.Now().UnixMilli()
	last := l.lastSweep.Load()
	if now-last < sweepEvery.Milliseconds() || !l.lastSweep.CompareAndSwap(last, now) {
		return
	}
	_, _ = l.pool.Exec(ctx, `DELETE FROM mrtr_ledger WHERE op IN
		(SELECT op FROM mrtr_ledger WHERE expires <= statement_timestamp() LIMIT 1000)`)
}

func (l *Ledger) Ping(ctx context.Context) error {
	if l.closed.Load() {
		return ledger.ErrClosed
	}
	return l.pool.Ping(ctx)
}

// Close closes the pool Open made (not one given to New).
func (l *Ledger) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	if l.owned {
		l.pool.Close()
	}
	return nil
}
