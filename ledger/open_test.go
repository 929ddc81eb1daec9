package ledger_test

import (
	"context"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/ledger"
)

func TestOpenSettings(t *testing.T) {
	ctx := context.Background()
	for _, s := range []string{"", "memory:", "memory:?max=5", "memory:?max_bytes=1048576", "memory:?max=5&max_bytes=4096"} {
		l, err := ledger.Open(ctx, s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if !ledger.InProcess(l) {
			t.Fatalf("%q opened %T", s, l)
		}
	}
	for _, s := range []string{"memory:x", "memory:?max=0", "memory:?size=3", "memory:?max_bytes=0", "memory:?max_bytes=1MiB", "postgres://x"} {
		if _, err := ledger.Open(ctx, s); err == nil {
			t.Fatalf("%q opened", s)
		}
	}
}
