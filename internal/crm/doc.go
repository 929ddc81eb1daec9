// Package crm is the demo server's small CRM: demo-call bookings and the
// calendar connections made through the /connect page.
//
// It is a real database, not a map: an embedded SQLite file by default
// (modernc.org/sqlite, pure Go, created on first use), so bookings survive
// a restart. Several server instances share one CRM through PostgreSQL
// (postgres://… settings, through pgx's database/sql driver), since an
// embedded file belongs to one machine. Both run the same SQL and the same
// versioned migrations (table crm_schema), applied in one transaction that
// instances starting at once take in turns (SQLite's write lock, a
// PostgreSQL advisory lock).
//
// The guarantees hold across instances because the database enforces
// them: one booking per operation id (a UNIQUE constraint), and a connect
// link completes once, only for its principal, before it expires (a
// guarded UPDATE in the transaction that stores the key).
//
// Secrets never leave the store: calendar API keys are written but never
// read back through this API, no method logs, and neither errors nor
// Store.Where repeat a PostgreSQL password. The SQLite file and its -wal
// and -shm files are mode 0600 from their creation, and a connect session
// is deleted once it has expired.
package crm
