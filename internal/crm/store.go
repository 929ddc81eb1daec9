package crm

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/privatefile"
	"modernc.org/sqlite" // the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"
)

// Booking is one booked demo call.
type Booking struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Email       string    `json:"email"`
	Topic       string    `json:"topic"`
	Slot        string    `json:"slot,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	Principal   string    `json:"-"`
	OperationID string    `json:"-"`
}

// ConnectSession is a pending or finished /connect page visit: an opaque
// id bound server-side to the principal who asked for it.
type ConnectSession struct {
	ID        string
	Principal string
	ExpiresAt time.Time
	Completed bool
}

// Stable errors.
var (
	ErrNotFound  = errors.New("crm: not found")
	ErrExpired   = errors.New("crm: the connect link has expired")
	ErrUsed      = errors.New("crm: the connect link was already used")
	ErrPrincipal = errors.New("crm: the connect link belongs to another principal")
	// ErrDuplicate: another principal's booking holds this operation id.
	// The ledger prevents second bookings; the unique index makes sure
	// one can never be written.
	ErrDuplicate = errors.New("crm: a booking for this operation already exists")
)

// Store is the CRM. It is safe for concurrent use, also by several
// processes sharing one database.
type Store struct {
	db       *sql.DB
	postgres bool
	now      func() time.Time
	// Where says what backs the store, without credentials (for logs).
	Where string
}

// Open opens the CRM a setting names, creating it on first use:
//
//	""  or  sqlite:PATH   an embedded SQLite file (PATH may be a directory,
//	                      then PATH/crm.db)
//	postgres://…          PostgreSQL, shared by several instances
//	postgresql://…        (pgx's URL: sslmode, search_path and other
//	                      settings go in the query)
//
// Errors never repeat the setting, which may hold a password.
func Open(ctx context.Context, setting string) (*Store, error) {
	switch {
	case strings.HasPrefix(setting, "postgres://"), strings.HasPrefix(setting, "postgresql://"):
		return openPostgres(ctx, setting)
	case setting == "" || strings.HasPrefix(setting, "sqlite:"):
		return openSQLite(ctx, strings.TrimPrefix(setting, "sqlite:"))
	}
	return nil, errors.New("crm: unknown setting: want sqlite:PATH or postgres://…")
}

func openSQLite(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		path = "crm.db"
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "crm.db")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("crm: creating the data directory: %w", err)
	}
	if err := privatefile.SQLite(path); err != nil {
		return nil, fmt.Errorf("crm: %w", err)
	}
	// WAL lets readers run beside the one writer; busy_timeout makes
	// writers queue instead of failing; NORMAL sync in WAL mode survives a
	// crash of the process (a power cut may lose the last commits).
	// busy_timeout comes first so that the other pragmas wait too when
	// several processes open a new file at once.
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(ON)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("crm: opening %s: %w", path, err)
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	s := &Store{db: db, now: time.Now, Where: "sqlite:" + path}
	// Instances opening a new file at once race to switch it to WAL, and
	// SQLite may then answer SQLITE_BUSY without waiting its busy_timeout:
	// try again, for up to about 10 s.
	for try := 1; ; try++ {
		err = s.migrate(ctx)
		if err == nil {
			return s, nil
		}
		var se *sqlite.Error
		if !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || try == 40 {
			db.Close()
			return nil, err
		}
		select {
		case <-time.After(time.Duration(try) * 12 * time.Millisecond):
		case <-ctx.Done():
			db.Close()
			return nil, err
		}
	}
}

// migrations are applied in order, each once, and each database records
// how many it has in crm_schema. Every statement runs on both SQLite and
// PostgreSQL. Append new ones; never edit one that has shipped.
var migrations = [][]string{
	{ // 1: the first schema (IF NOT EXISTS: databases made before crm_schema
		// existed already have these tables).
		`CREATE TABLE IF NOT EXISTS bookings (
			id TEXT PRIMARY KEY,
			principal TEXT NOT NULL,
			name TEXT NOT NULL,
			email TEXT NOT NULL,
			topic TEXT NOT NULL,
			slot TEXT NOT NULL,
			operation_id TEXT NOT NULL UNIQUE,
			created_at TEXT NOT NULL,
			created_ms BIGINT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS bookings_principal ON bookings (principal, created_ms)`,
		`CREATE TABLE IF NOT EXISTS connect_sessions (
			id TEXT PRIMARY KEY,
			principal TEXT NOT NULL,
			expires_ms BIGINT NOT NULL,
			completed_ms BIGINT)`,
		`CREATE TABLE IF NOT EXISTS calendar_keys (
			principal TEXT PRIMARY KEY,
			api_key TEXT NOT NULL,
			updated_ms BIGINT NOT NULL)`,
	},
	{ // 2: NewConnect deletes expired sessions by expiry.
		`CREATE INDEX IF NOT EXISTS connect_sessions_expires ON connect_sessions (expires_ms)`,
	},
}

// migrate brings the schema up to date in one transaction, which several
// instances may run at once: SQLite's BEGIN IMMEDIATE (_txlock) and
// PostgreSQL's advisory lock make them take turns, so the later ones find
// the work done. A database migrated by a newer binary is left as it is.
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("crm: opening the database: %w", err)
	}
	defer tx.Rollback()
	if s.postgres {
		if err := lockMigrations(ctx, tx); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS crm_schema (
		version INTEGER PRIMARY KEY,
		applied_ms BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("crm: creating tables: %w", err)
	}
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM crm_schema`).Scan(&have); err != nil {
		return fmt.Errorf("crm: reading the schema version: %w", err)
	}
	for v := have; v < len(migrations); v++ {
		for _, q := range migrations[v] {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("crm: migration %d: %w", v+1, err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO crm_schema (version, applied_ms) VALUES (?, ?)`), v+1, s.now().UnixMilli()); err != nil {
			return fmt.Errorf("crm: migration %d: %w", v+1, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("crm: creating tables: %w", err)
	}
	return nil
}

// q rewrites ? placeholders to $n for PostgreSQL.
func (s *Store) q(query string) string {
	if !s.postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

func randomID(prefix string, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crm: crypto/rand failed: " + err.Error())
	}
	if prefix == "" {
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return prefix + hex.EncodeToString(b)
}

// AddBooking writes one booking for the operation and returns it with its
// id and creation time. It is idempotent per operation: a second call for
// the same operation returns the first booking (ErrDuplicate when the
// operation belongs to another principal).
func (s *Store) AddBooking(ctx context.Context, b Booking) (Booking, error) {
	b, err := s.newBooking(b)
	if err != nil {
		return Booking{}, err
	}
	_, err = s.db.ExecContext(ctx, s.q(insertBooking), b.insertArgs()...)
	if err != nil {
		if s.isUniqueViolation(err) {
			// The operation was booked already (instances that do not
			// share a ledger, or a ledger that forgot): the write is
			// idempotent, so the existing booking is the answer.
			return s.bookingByOperation(ctx, b.Principal, b.OperationID)
		}
		return Booking{}, fmt.Errorf("crm: writing the booking: %w", err)
	}
	return b, nil
}

// insertBooking writes a booking (? placeholders, see Store.q).
const insertBooking = `INSERT INTO bookings
	(id, principal, name, email, topic, slot, operation_id, created_at, created_ms)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

// newBooking checks b and gives it its id and creation time.
func (s *Store) newBooking(b Booking) (Booking, error) {
	if b.Principal == "" || b.OperationID == "" {
		return Booking{}, errors.New("crm: a booking needs a principal and an operation id")
	}
	b.ID = randomID("bk_", 8)
	b.CreatedAt = s.now().UTC().Truncate(time.Millisecond)
	return b, nil
}

func (b Booking) insertArgs() []any {
	return []any{b.ID, b.Principal, b.Name, b.Email, b.Topic, b.Slot, b.OperationID,
		b.CreatedAt.Format(time.RFC3339Nano), b.CreatedAt.UnixMilli()}
}

// bookingByOperation returns the principal's booking for an operation, or
// ErrDuplicate when the operation belongs to someone else.
func (s *Store) bookingByOperation(ctx context.Context, principal, op string) (Booking, error) {
	var b Booking
	var created string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT id, principal, name, email, topic, slot, operation_id, created_at
		FROM bookings WHERE operation_id = ?`), op).Scan(&b.ID, &b.Principal, &b.Name, &b.Email, &b.Topic, &b.Slot, &b.OperationID, &created)
	if err != nil {
		return Booking{}, fmt.Errorf("crm: reading the booking: %w", err)
	}
	if b.Principal != principal {
		return Booking{}, ErrDuplicate
	}
	if t, perr := time.Parse(time.RFC3339Nano, created); perr == nil {
		b.CreatedAt = t
	}
	return b, nil
}

func (s *Store) isUniqueViolation(err error) bool {
	if s.postgres {
		return pgUniqueViolation(err)
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// ListBookings returns the principal's bookings, oldest first (at most
// 1000).
func (s *Store) ListBookings(ctx context.Context, principal string) ([]Booking, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, name, email, topic, slot, operation_id, created_at
		FROM bookings WHERE principal = ? ORDER BY created_ms, id LIMIT 1000`), principal)
	if err != nil {
		return nil, fmt.Errorf("crm: listing bookings: %w", err)
	}
	defer rows.Close()
	out := []Booking{}
	for rows.Next() {
		var b Booking
		var created string
		if err := rows.Scan(&b.ID, &b.Name, &b.Email, &b.Topic, &b.Slot, &b.OperationID, &created); err != nil {
			return nil, fmt.Errorf("crm: listing bookings: %w", err)
		}
		b.Principal = principal
		b.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
		out = append(out, b)
	}
	return out, rows.Err()
}

// NewConnect starts a /connect visit for principal and returns its opaque
// id (256 random bits, so it cannot be guessed; it names nobody). It first
// deletes every session that has expired, so the table holds only the
// links that can still be used.
func (s *Store) NewConnect(ctx context.Context, principal string, ttl time.Duration) (string, error) {
	id := randomID("", 32)
	now := s.now()
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM connect_sessions WHERE expires_ms < ?`), now.UnixMilli()); err != nil {
		return "", fmt.Errorf("crm: pruning connect sessions: %w", err)
	}
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO connect_sessions (id, principal, expires_ms) VALUES (?, ?, ?)`),
		id, principal, now.Add(ttl).UnixMilli())
	if err != nil {
		return "", fmt.Errorf("crm: starting a connect session: %w", err)
	}
	return id, nil
}

// Connect reads a connect session.
func (s *Store) Connect(ctx context.Context, id string) (ConnectSession, error) {
	var c ConnectSession
	var exp int64
	var done sql.NullInt64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT id, principal, expires_ms, completed_ms FROM connect_sessions WHERE id = ?`), id).
		Scan(&c.ID, &c.Principal, &exp, &done)
	if errors.Is(err, sql.ErrNoRows) {
		return ConnectSession{}, ErrNotFound
	}
	if err != nil {
		return ConnectSession{}, fmt.Errorf("crm: reading a connect session: %w", err)
	}
	c.ExpiresAt = time.UnixMilli(exp)
	c.Completed = done.Valid
	return c, nil
}

// CompleteConnect stores principal's calendar API key and closes the
// connect session, in one transaction. It refuses (and stores nothing) when
// the session is unknown, expired, already used, or bound to another
// principal: the anti-phishing rule.
func (s *Store) CompleteConnect(ctx context.Context, id, principal, apiKey string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("crm: %w", err)
	}
	defer tx.Rollback()
	var owner string
	var exp int64
	var done sql.NullInt64
	err = tx.QueryRowContext(ctx, s.q(`SELECT principal, expires_ms, completed_ms FROM connect_sessions WHERE id = ?`), id).
		Scan(&owner, &exp, &done)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("crm: reading a connect session: %w", err)
	}
	now := s.now()
	switch {
	case subtle.ConstantTimeCompare([]byte(owner), []byte(principal)) != 1:
		return ErrPrincipal
	case done.Valid:
		return ErrUsed
	case now.UnixMilli() > exp:
		return ErrExpired
	}
	// The guarded UPDATE is what makes the link single-use when two
	// submissions race (in PostgreSQL both may have read it as open): only
	// one of them changes the row.
	res, err := tx.ExecContext(ctx, s.q(`UPDATE connect_sessions SET completed_ms = ? WHERE id = ? AND completed_ms IS NULL`), now.UnixMilli(), id)
	if err != nil {
		return fmt.Errorf("crm: closing the connect session: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("crm: closing the connect session: %w", err)
	} else if n != 1 {
		return ErrUsed
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO calendar_keys (principal, api_key, updated_ms) VALUES (?, ?, ?)
		ON CONFLICT (principal) DO UPDATE SET api_key = excluded.api_key, updated_ms = excluded.updated_ms`),
		principal, apiKey, now.UnixMilli()); err != nil {
		return errors.New("crm: storing the calendar key failed")
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("crm: %w", err)
	}
	return nil
}

// CancelBooking deletes the principal's booking id and returns it
// (ErrNotFound when the principal has no such booking).
func (s *Store) CancelBooking(ctx context.Context, principal, id string) (Booking, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Booking{}, fmt.Errorf("crm: cancelling the booking: %w", err)
	}
	defer tx.Rollback()
	b := Booking{ID: id, Principal: principal}
	var created string
	err = tx.QueryRowContext(ctx, s.q(`SELECT name, email, topic, slot, operation_id, created_at
		FROM bookings WHERE id = ? AND principal = ?`), id, principal).Scan(&b.Name, &b.Email, &b.Topic, &b.Slot, &b.OperationID, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Booking{}, ErrNotFound
	}
	if err != nil {
		return Booking{}, fmt.Errorf("crm: cancelling the booking: %w", err)
	}
	b.CreatedAt, _ = time.Parse(time.RFC3339Nano, created)
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM bookings WHERE id = ? AND principal = ?`), id, principal); err != nil {
		return Booking{}, fmt.Errorf("crm: cancelling the booking: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Booking{}, fmt.Errorf("crm: cancelling the booking: %w", err)
	}
	return b, nil
}
