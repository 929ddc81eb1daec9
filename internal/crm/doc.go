// Package crm is the demo server's small CRM: demo-call bookings and the
// calendar connections made through the /connect page.
//
// It is a real database, not a map: an embedded SQLite file by default
// (modernc.org/sqlite, pure Go, created on first use), so bookings survive
// a restart. Several server instances share one CRM through PostgreSQL
// (postgres://… settings), since an embedded file belongs to one machine.
//
// Secrets never leave the store: calendar API keys are written but never
// read back through this API, and no method logs.
package crm
