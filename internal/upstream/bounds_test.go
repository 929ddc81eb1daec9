package upstream

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestStdioQueueBudgetOverall (finding 10): each call may queue up to
// queueBudget × MaxMessage for a slow client, but many slow calls together
// are held to MaxQueued. Call A floods 8 × 30 KiB (under its own 256 KiB)
// and its client does not read; call B, whose client does not read
// either, then floods as much: B's message that would pass the 256 KiB
// overall budget fails B (CodeTooLarge, saying so), A still gets all of
// its messages, and every byte goes back to the budget once the calls are
// over.
func TestStdioQueueBudgetOverall(t *testing.T) {
	cfg, _ := childConfig(t, "ok")
	cfg.MaxMessage = 64 << 10
	cfg.MaxQueued = 256 << 10
	s := startChild(t, cfg)
	c, err := s.current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	flood := map[string]any{"count": 8, "size": 30 << 10}
	meta := func(tok string) string {
		return `{"progressToken":"` + tok + `","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	}
	read := make(chan struct{})
	aDone := make(chan error, 1)
	aGot := 0
	go func() {
		_, err := s.Call(context.Background(), toolCall("1", "flood", flood, meta("a")), nil, func([]byte) error {
			<-read // a client that does not read yet
			aGot++
			return nil
		})
		aDone <- err
	}()
	// A's answer is routed: all of its flood waits in its queue.
	waitFor(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.pending) == 0 && s.QueuedBytes() >= 7*(30<<10)
	}, "A's flood queued and its answer routed")
	bDone := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), toolCall("2", "flood", flood, meta("b")), nil, func([]byte) error { <-read; return nil })
		bDone <- err
	}()
	var errB error
	select { // B fails at the overall budget while neither client reads
	case errB = <-bDone:
	case <-time.After(10 * time.Second):
		t.Fatalf("B did not fail (queued %d)", s.QueuedBytes())
	}
	if q := s.QueuedBytes(); q > cfg.MaxQueued {
		t.Fatalf("%d bytes queued, over the %d budget", q, cfg.MaxQueued)
	}
	close(read)
	e := wantCode(t, errB, CodeTooLarge)
	if !strings.Contains(e.Message, "overall") {
		t.Fatalf("B's error does not name the overall budget: %q", e.Message)
	}
	if err := <-aDone; err != nil {
		t.Fatalf("A: %v", err)
	}
	if aGot != 8 {
		t.Fatalf("A got %d of its 8 messages", aGot)
	}
	waitFor(t, func() bool { return s.QueuedBytes() == 0 }, "the budget back to 0")
}

// TestLegacyRequestWhileCallsOpenNamesTheCause: a legacy child's
// server-to-client request while two calls of its user are open cannot be
// given to either; the refusal says so (not "outside any single call").
func TestLegacyRequestWhileCallsOpenNamesTheCause(t *testing.T) {
	cfg, _ := childConfig(t, "legacy")
	s := startChild(t, cfg)
	slept := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), toolCall("1", "sleep", map[string]any{"ms": 1500}, ""), nil, nil)
		slept <- err
	}()
	c, err := s.current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.pending) == 1 }, "the first call open")
	raw, err := s.Call(context.Background(), toolCall("2", "ask", nil, ""), nil, func([]byte) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got := decode(t, raw).Result.Content[0].Text; !strings.Contains(got, "while 2 calls of this user were open") {
		t.Fatalf("the child heard %q", got)
	}
	if err := <-slept; err != nil {
		t.Fatal(err)
	}
}

// TestPerPrincipalRoundHold (finding 7, at the transport): with one child
// allowed, alice's call whose elicitation waits keeps bob out only until
// it has waited RoundHold (bob is told when to retry); then alice's child
// is stopped for bob, and alice's call fails saying why.
func TestPerPrincipalRoundHold(t *testing.T) {
	cfg, _ := childConfig(t, "legacy")
	cfg.RoundHold = 300 * time.Millisecond
	p, err := NewPerPrincipal(context.Background(), cfg, 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	asked := make(chan struct{})
	aliceDone := make(chan error, 1)
	go func() {
		ctx := WithRounds(WithPrincipal(context.Background(), "alice"))
		_, err := p.Call(ctx, toolCall("1", "ask", nil, ""), nil, func([]byte) error { close(asked); return nil })
		aliceDone <- err
	}()
	<-asked
	bob := WithPrincipal(context.Background(), "bob")
	_, err = p.Call(bob, toolCall("2", "echo", map[string]any{"text": "hi"}, ""), nil, nil)
	e := wantCode(t, err, CodeUnavailable)
	if e.RetryAfter <= 0 || e.RetryAfter > cfg.RoundHold {
		t.Fatalf("bob's refusal: RetryAfter %s (%q)", e.RetryAfter, e.Message)
	}
	time.Sleep(e.RetryAfter + 50*time.Millisecond)
	if _, err := p.Call(bob, toolCall("3", "echo", map[string]any{"text": "hi"}, ""), nil, nil); err != nil {
		t.Fatalf("bob after the hold: %v", err)
	}
	if e := wantCode(t, <-aliceDone, CodeUnavailable); !strings.Contains(e.Message, "--child-round-hold") {
		t.Fatalf("alice's call: %q", e.Message)
	}
}
