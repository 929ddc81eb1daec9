// Package row turns a ledger row of the SQL backends (ledger/sqlite,
// ledger/postgres: done, fp, result) into a ledger.Entry.
package row

import (
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/internal/opcheck"
)

// Entry is the entry of a live row.
func Entry(done bool, fp, result []byte) ledger.Entry {
	e := ledger.Entry{State: ledger.Pending}
	copy(e.Fingerprint[:], fp)
	if done {
		e.State, e.Result = ledger.Done, opcheck.Clone(result)
	}
	return e
}
