package ledger_test

import (
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/ledgertest"
)

// The memory ledger reads Go's clock: its timed checks run in a bubble.
// (ledger/sqlite and ledger/redis run the same contract on their stores.)
func TestContract(t *testing.T) {
	ledgertest.Contract(t, ledgertest.Bubble, func(t *testing.T) ledger.Ledger { return ledger.NewMemory() })
}
