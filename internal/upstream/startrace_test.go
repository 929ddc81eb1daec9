package upstream

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestOnePrincipalsFirstCallsLeaveRoomForOthers: many concurrent first
// calls of one principal start one child, not one each, so another
// principal is not told that every child is busy.
func TestOnePrincipalsFirstCallsLeaveRoomForOthers(t *testing.T) {
	cfg, _ := childConfig(t, "legacy")
	p, err := NewPerPrincipal(context.Background(), cfg, 4, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ping := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Call(WithPrincipal(context.Background(), "mallory"), ping, nil, nil)
		}()
	}
	time.Sleep(20 * time.Millisecond)
	_, err = p.Call(WithPrincipal(context.Background(), "alice"), ping, nil, nil)
	wg.Wait()
	if err != nil {
		t.Fatalf("alice, while mallory's first calls start her child: %v", err)
	}
}
