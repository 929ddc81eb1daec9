// Package postgres is the replay ledger in PostgreSQL, for several
// instances, through pgx. Importing it makes ledger.Open accept
// "postgres://…" and "postgresql://…"; it lives apart from package
// ledger so that programs that do not use it do not link pgx.
//
// Its table, mrtr_ledger, is created on first start (under an advisory
// lock, so instances starting at once take turns) in the first schema of
// the connection's search_path: set search_path=… in the URL to keep
// deployments apart in one database.
//
// Besides the ledger.Ledger calls, OnceTx runs an effect that writes to
// the same database inside the transaction that claims the operation and
// records its result: they commit together or not at all, so a crash of
// this process or of PostgreSQL at any moment leaves either nothing (a
// retry runs the effect) or everything (a retry gets the stored result).
// No idempotency key is needed downstream. host.Guard.OnceTx runs it for
// an MRTR outcome.
package postgres
