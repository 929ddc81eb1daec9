// Package row is what the SQL backends (ledger/sqlite, ledger/postgres)
// share: a row (done, fp, result) as a ledger.Entry, and what a claim
// finds in it.
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

// Claim is what a claim with fp finds in e, a live entry: Conflict,
// Finished (with e's result) or InProgress; ok is false when e is Absent
// and the claim may take the operation.
func Claim(e ledger.Entry, fp ledger.Fingerprint) (c ledger.Claim, ok bool) {
	switch {
	case e.State == ledger.Absent:
		return ledger.Claim{}, false
	case e.Fingerprint != fp:
		return ledger.Claim{Status: ledger.Conflict}, true
	case e.State == ledger.Done:
		return ledger.Claim{Status: ledger.Finished, Result: e.Result}, true
	}
	return ledger.Claim{Status: ledger.InProgress}, true
}
