package ledger

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestExpHeap: the typed heap pops in time order.
func TestExpHeap(t *testing.T) {
	var h expHeap
	for _, d := range []int64{5, 3, 9, 1, 7, 3, 0, 8, 2, 6, 4} {
		h.push(expItem{at: d})
	}
	var got []int64
	for len(h) > 0 {
		got = append(got, h.pop().at)
	}
	if !slices.IsSorted(got) || len(got) != 11 {
		t.Fatalf("popped %v", got)
	}
	h = nil
	for _, d := range []int64{5, 3, 9, 1, 7} {
		h = append(h, expItem{at: d})
	}
	h.init()
	got = got[:0]
	for len(h) > 0 {
		got = append(got, h.pop().at)
	}
	if !slices.Equal(got, []int64{1, 3, 5, 7, 9}) {
		t.Fatalf("after init: %v", got)
	}
}

// A backend this program did not import is named in the error, with the
// import that links it; the setting (which may hold a password) is not.
func TestOpenUnlinkedBackend(t *testing.T) {
	// This test binary links both (bench_test.go): forget them here.
	openersMu.Lock()
	saved := openers
	openers = map[string]Opener{}
	openersMu.Unlock()
	t.Cleanup(func() { openersMu.Lock(); openers = saved; openersMu.Unlock() })
	for s, pkg := range map[string]string{
		"redis://user:hunter2@127.0.0.1:6379/0": "ledger/redis",
		"sqlite:/tmp/hunter2.db":                "ledger/sqlite",
		"file:/tmp/hunter2.db":                  "ledger/sqlite",
	} {
		_, err := Open(context.Background(), s)
		if err == nil || !strings.Contains(err.Error(), pkg) || strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("%q: %v", s, err)
		}
	}
}
