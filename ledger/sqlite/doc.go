// Package sqlite is the replay ledger in one SQLite file, for the
// processes of one machine (through the pure-Go modernc.org/sqlite).
// Importing it makes ledger.Open accept "sqlite:/path" and "file:/path";
// it lives apart from package ledger so that programs that do not use it
// do not link SQLite.
package sqlite
