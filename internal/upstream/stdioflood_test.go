package upstream

import (
	"context"
	"testing"
	"time"
)

// A child that floods one call with messages while its client reads
// slowly: what waits for the client is bounded in bytes (queueBudget ×
// MaxMessage), past which the call fails with CodeTooLarge, rather than
// held in memory without end (only the count of messages was bounded).
// The client's first onMessage returns only once the child's answer has
// been routed, so every message has come in by then, whatever the load.
func TestStdioSlowClientFloodIsBounded(t *testing.T) {
	cfg, _ := childConfig(t, "ok")
	cfg.MaxMessage = 64 << 10
	s := startChild(t, cfg)
	c, err := s.current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	first := true
	_, err = s.Call(context.Background(), toolCall("1", "flood", map[string]any{"count": 100, "size": 32 << 10}, `{"progressToken":"t"}`), nil, func([]byte) error {
		if first {
			first = false
			for { // until the child's answer was routed (it comes after the flood)
				c.mu.Lock()
				n := len(c.pending)
				c.mu.Unlock()
				if n == 0 {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		return nil
	})
	wantCode(t, err, CodeTooLarge)
}
