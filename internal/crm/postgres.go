package crm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
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
		// pgx's parse errors quote the URL, password redacted as best it
		// can: say nothing of it instead.
		return nil, errors.New("crm: the PostgreSQL URL does not parse (not shown: it may hold a password)")
	}
	db := stdlib.OpenDB(*cfg)
	// Each instance keeps a small pool: PostgreSQL's connections are
	// costly and shared by every instance.
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(8)
	db.SetConnMaxIdleTime(5 * time.Minute)
	db.SetConnMaxLifetime(30 * time.Minute)
	s := &Store{db: db, postgres: true, now: time.Now, Where: postgresWhere(cfg)}
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

// postgresWhere names the database for logs: user, host, port, database
// and search_path, never the password or other query settings.
func postgresWhere(cfg *pgx.ConnConfig) string {
	host := cfg.Host
	if cfg.Port != 0 {
		host = net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	}
	u := url.URL{Scheme: "postgres", User: url.User(cfg.User), Host: host, Path: "/" + cfg.Database}
	if sp := cfg.RuntimeParams["search_path"]; sp != "" {
		u.RawQuery = url.Values{"search_path": {sp}}.Encode()
	}
	return u.String()
}

// pgUniqueViolation reports SQLSTATE 23505 (unique_violation).
func pgUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
