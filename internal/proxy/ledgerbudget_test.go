package proxy

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
)

// TestForwardedResultsCountAgainstLedgerBytes: the upstream results the
// proxy stores for replay count against the memory ledger's byte budget.
// Once they fill it, a new round is refused before the upstream sees it
// (retryable, the ledger's stable code), and the stored ones still replay.
func TestForwardedResultsCountAgainstLedgerBytes(t *testing.T) {
	var finals atomic.Int64
	big := strings.Repeat("x", 100<<10)
	up := rpcServer(t, func(w http.ResponseWriter, body []byte) {
		switch {
		case isToolsList(body):
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[]}}`)
		case bytes.Contains(body, []byte(`"requestState":"step=1"`)):
			finals.Add(1)
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"content":[{"type":"text","text":"`+big+`"}]}}`)
		default:
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Sure?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}},"requestState":"step=1"}}`)
		}
	})
	l := ledger.NewMemory(ledger.WithMaxBytes(250 << 10))
	base, _ := newProxy(t, newGuard(t, host.WithLedger(l)), httpUpstream(t, up.URL))
	var retries []string
	round := func(n int) *rpcMsg {
		first, _ := callTool(t, base, "act", fmt.Sprintf(`{"n":%d}`, n), "")
		retries = append(retries, `,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":"`+sealedState(t, first)+`"`)
		m, _ := callTool(t, base, "act", fmt.Sprintf(`{"n":%d}`, n), retries[n])
		return m
	}
	for n := range 3 {
		if m := round(n); m.Error != nil || !bytes.Contains(m.Result, []byte(big)) {
			t.Fatalf("round %d: %+v", n, m.Error)
		}
	}
	// 300 KiB of results stored: over the 250 KiB budget.
	m := round(3)
	if m.Error == nil || m.Error.Code != -32603 || !strings.Contains(m.Error.Message, "retry later") {
		t.Fatalf("a round over the ledger's byte budget: %s %+v", m.Result, m.Error)
	}
	if n := finals.Load(); n != 3 {
		t.Fatalf("the upstream got %d final rounds, want 3 (the refused one never reaches it)", n)
	}
	if m, _ := callTool(t, base, "act", `{"n":0}`, retries[0]); m.Error != nil || !bytes.Contains(m.Result, []byte(big)) {
		t.Fatalf("a stored round no longer replays: %+v", m.Error)
	}
}
