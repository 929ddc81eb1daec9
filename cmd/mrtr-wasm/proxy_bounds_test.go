package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// The proxy's pool flags: defaults, and a refusal of a cap that is not
// positive.
func TestProxyBoundFlags(t *testing.T) {
	o, err := parseProxy([]string{"--", "true"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.maxPending != 1024 || o.maxPendingOne != 16 || o.childRoundHold != time.Minute || o.upstreamQueued != 64<<20 {
		t.Fatalf("defaults: %d %d %s %d", o.maxPending, o.maxPendingOne, o.childRoundHold, o.upstreamQueued)
	}
	for _, f := range []string{"--max-pending", "--max-pending-principal", "--upstream-max-queued", "--child-round-hold"} {
		if _, err := parseProxy([]string{f, "0", "--", "true"}, io.Discard); err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("%s 0: %v", f, err)
		}
	}
}
