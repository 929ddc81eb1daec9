package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/testseam"
)

// The seams reach the guard only through internal/testseam: with the same
// key, clock and randomness two guards seal the very same state, and with
// real randomness they never do.
func TestSeamsReachTheGuard(t *testing.T) {
	ctx := context.Background()
	keys := host.NewKeyring()
	at := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	seal := func(opts ...host.Option) string {
		g, err := host.New(ctx, append([]host.Option{host.WithKeys(keys), host.WithPoolSize(1), host.WithEngine(host.EngineNative),
			testseam.Clock[host.Option](func() time.Time { return at })}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close(ctx)
		req := &host.Request{Principal: "alice", Method: "tools/call", Target: "t", Arguments: json.RawMessage(`{}`),
			Capabilities: json.RawMessage(`{"elicitation":{"form":{}}}`)}
		ir, err := g.Ask(ctx, req, []host.InputRequest{host.Form("c", "Name?", json.RawMessage(`{"type":"object","properties":{"n":{"type":"string"}}}`))})
		if err != nil {
			t.Fatal(err)
		}
		return ir.RequestState
	}
	zeros := func() host.Option { return testseam.Random[host.Option](bytes.NewReader(make([]byte, 1<<10))) }
	if a, b := seal(zeros()), seal(zeros()); a != b {
		t.Fatal("the random seam did not reach the guard: two states differ")
	}
	if a, b := seal(), seal(); a == b {
		t.Fatal("two states sealed with real randomness are identical")
	}
}
