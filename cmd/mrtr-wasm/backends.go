package main

// The CLI takes any ledger setting, so it links every backend; a program
// that imports only package host links neither SQLite, go-redis nor pgx's pool.
import (
	_ "github.com/mrtr-wasm/mrtr-wasm/ledger/postgres" // postgres://, postgresql://
	_ "github.com/mrtr-wasm/mrtr-wasm/ledger/redis"    // redis://, rediss://
	_ "github.com/mrtr-wasm/mrtr-wasm/ledger/sqlite"   // sqlite:, file:
)
