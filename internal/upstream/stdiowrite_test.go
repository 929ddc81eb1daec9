package upstream

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A write whose context ends just as it completes used to leave its
// AfterFunc running, which could set a past deadline on stdin after the
// next writer had set its own: that writer's write failed ("not accepting
// input") though nothing cancelled it. Writers with contexts cancelled at
// random race writers without any; none of the latter may fail.
func TestStdioCancelledWriteDoesNotFailTheNext(t *testing.T) {
	cfg, _ := childConfig(t, "ok")
	s := startChild(t, cfg)
	c, err := s.current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/x"}`)
	var bad atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(2 * time.Second)
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(time.Duration(rand.IntN(20))*time.Microsecond, cancel)
				_ = c.write(ctx, msg)
				cancel()
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(stop) && bad.Load() == 0 {
				if err := c.write(context.Background(), msg); err != nil {
					bad.Add(1)
					t.Errorf("a write without a deadline failed: %v", err)
				}
			}
		})
	}
	wg.Wait()
}
