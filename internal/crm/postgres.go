package crm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/mrtr-wasm/mrtr-wasm/internal/pgconf"
)

// migrationLock is the key of the transaction-scoped advisory lock that
// serialises schema migrations between instances starting at once
// (CREATE TABLE IF NOT EXISTS alone races in PostgreSQL). It reads
// "mrtr-crm" in ASCII.
const migrationLock int64 = 0x6d7274722d63726d

// openPostgres opens a CRM in PostgreSQL through pgx's database/sql
// driver. The setting is a pgx connection URL; the tables go in the first
// schema of its search_path (search_path=… or options=-csearch_path=…).
func openPostgres(ctx context.Context, setting string) (*Store, error) {
	cfg, err := pgx.ParseConfig(setting)
	if err != nil {
		return nil, fmt.Errorf("crm: %w", pgconf.ErrParse)
	}
	db := stdlib.OpenDB(*cfg)
	// Each instance keeps a small pool: PostgreSQL's connections are
	// costly and shared by every instance.
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(8)
	db.SetConnMaxIdleTime(5 * time.Minute)
	db.SetConnMaxLifetime(30 * time.Minute)
	s := &Store{db: db, postgres: true, now: time.Now, Where: pgconf.Where(cfg)}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// lockMigrations takes the migration lock until tx ends.
func lockMigrations(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
		return fmt.Errorf("crm: locking the schema: %w", err)
	}
	return nil
}

// pgUniqueViolation reports SQLSTATE 23505 (unique_violation).
func pgUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// AddBookingTx writes one booking for the operation through tx, a
// transaction on this store's PostgreSQL database (the replay ledger's
// OnceTx: the booking commits with the ledger's record of it, or not at
// all). The ledger runs it once per operation; the unique operation id
// still refuses a second row, and the transaction fails rather than
// write one.
func (s *Store) AddBookingTx(ctx context.Context, tx pgx.Tx, b Booking) (Booking, error) {
	if !s.postgres {
		return Booking{}, errors.New("crm: AddBookingTx needs the PostgreSQL store")
	}
	b, err := s.newBooking(b)
	if err != nil {
		return Booking{}, err
	}
	if _, err := tx.Exec(ctx, s.q(insertBooking), b.insertArgs()...); err != nil {
		return Booking{}, fmt.Errorf("crm: writing the booking: %w", err)
	}
	return b, nil
}
