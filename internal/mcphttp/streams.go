package mcphttp

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Defaults for Streams.
const (
	DefaultMaxStreams          = 1024
	DefaultMaxStreamsPrincipal = 16
)

// CodeServerBusy is the JSON-RPC error of a retryable refusal for want of
// room (a stream or legacy session past its cap, an instance draining),
// outside the band 2026-07-28 reserves (-32020..-32099).
const CodeServerBusy = -32000

// Streams bounds the streams a server holds open for as long as the client
// wants (subscriptions/listen): in all, and per principal, so that one
// caller cannot hold every connection and its memory. Each costs a
// connection, a goroutine and buffers for as long as it lasts.
type Streams struct {
	Max, PerPrincipal int

	mu    sync.Mutex
	total int
	by    map[string]int
}

// Acquire takes room for one stream of principal; release gives it back.
// ok is false when there is none.
func (s *Streams) Acquire(principal string) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.total >= positiveOr(s.Max, DefaultMaxStreams) || s.by[principal] >= positiveOr(s.PerPrincipal, DefaultMaxStreamsPrincipal) {
		return nil, false
	}
	if s.by == nil {
		s.by = map[string]int{}
	}
	s.total++
	s.by[principal]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.total--
			if s.by[principal]--; s.by[principal] <= 0 {
				delete(s.by, principal)
			}
		})
	}, true
}

// Held is how many are taken now, in all.
func (s *Streams) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// positiveOr is v, or def when v is not positive (unlike cmp.Or, a
// negative limit means the default too).
func positiveOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// WriteBusy answers a request refused by Streams: HTTP 503 with
// Retry-After, and a JSON-RPC error with the request's id.
func WriteBusy(w http.ResponseWriter, id json.RawMessage) {
	w.Header().Set("Retry-After", "5")
	WriteRPCError(w, http.StatusServiceUnavailable, id, &jsonrpc.Error{Code: CodeServerBusy,
		Message: "too many open subscriptions/listen streams: try again later"})
}
