package upstream

import "sync/atomic"

// DefaultMaxQueued is the overall budget of bytes from stdio children
// that wait for clients that read slowly (StdioConfig.MaxQueued). One call
// may hold up to queueBudget × MaxMessage of it (16 MiB by default); the
// budget bounds what many slow readers hold together.
const DefaultMaxQueued = 64 << 20

// byteBudget is a byte count shared by the calls of every child made from
// one StdioConfig (PerPrincipal's children share it).
type byteBudget struct {
	max  int64
	used atomic.Int64
}

func newByteBudget(max int64) *byteBudget {
	if max <= 0 {
		max = DefaultMaxQueued
	}
	return &byteBudget{max: max}
}

// take reserves n bytes; false when that would pass the budget.
func (b *byteBudget) take(n int) bool {
	if b == nil {
		return true
	}
	if b.used.Add(int64(n)) > b.max {
		b.used.Add(-int64(n))
		return false
	}
	return true
}

func (b *byteBudget) give(n int) {
	if b != nil && n != 0 {
		b.used.Add(-int64(n))
	}
}

func (b *byteBudget) held() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}
