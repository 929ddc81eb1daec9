// Package ledgertest is the contract every ledger backend passes, and the
// helpers its tests share. Each backend's tests run Contract against a
// real store: memory in package ledger, SQLite in ledger/sqlite, Redis
// in ledger/redis.
package ledgertest
