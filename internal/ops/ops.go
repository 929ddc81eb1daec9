package ops

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
)

// A Check is one thing an instance needs in order to serve. Probe's error
// is shown on /readyz, so it must name a state, never a secret (a URL's
// password, a token).
type Check struct {
	Name  string
	Probe func(context.Context) error
}

// probeTimeout bounds each check of one /readyz request.
const probeTimeout = 2 * time.Second

// Lifecycle tracks readiness and the requests in flight.
type Lifecycle struct {
	checks   []Check
	draining atomic.Bool

	mu       sync.Mutex
	inflight int
	idle     chan struct{} // closed while inflight is 0 and draining
}

// New returns a Lifecycle that is ready while every check passes.
func New(checks ...Check) *Lifecycle { return &Lifecycle{checks: checks} }

// Draining reports whether a shutdown has begun.
func (l *Lifecycle) Draining() bool { return l.draining.Load() }

// Healthz answers 200 while the process can answer at all: an orchestrator
// restarts an instance that fails it, so it checks nothing outside.
func (l *Lifecycle) Healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}

// Readyz answers 200 when every check passes and no shutdown has begun,
// else 503 with what failed.
func (l *Lifecycle) Readyz(w http.ResponseWriter, r *http.Request) {
	if l.Draining() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "draining"})
		return
	}
	failed := l.probe(r.Context())
	if len(failed) > 0 {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "not_ready", "failed": failed})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready"})
}

// probe runs the checks side by side, each within probeTimeout.
func (l *Lifecycle) probe(ctx context.Context) map[string]string {
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed := map[string]string{}
	for _, c := range l.checks {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			err := c.Probe(pctx)
			if err == nil {
				return
			}
			msg := err.Error()
			if errors.Is(err, context.DeadlineExceeded) {
				msg = "no answer within " + probeTimeout.String()
			}
			mu.Lock()
			failed[c.Name] = msg
			mu.Unlock()
		})
	}
	wg.Wait()
	return failed
}

// Guard counts the requests h serves; once draining it refuses new ones
// with HTTP 503, Retry-After and a JSON-RPC -32000 error.
func (l *Lifecycle) Guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !l.enter() {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"jsonrpc": "2.0", "id": nil,
				"error": map[string]any{"code": mcphttp.CodeServerBusy, "message": "this instance is shutting down: retry the request (another instance will take it)"}})
			return
		}
		defer l.leave()
		h.ServeHTTP(w, r)
	})
}

func (l *Lifecycle) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.draining.Load() {
		return false
	}
	l.inflight++
	return true
}

func (l *Lifecycle) leave() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight--
	if l.inflight == 0 && l.idle != nil {
		close(l.idle)
		l.idle = nil
	}
}

// Drain begins the shutdown: readiness turns false and new requests are
// refused. It returns when the requests in flight have finished, or with
// ctx's error when ctx ends first.
func (l *Lifecycle) Drain(ctx context.Context) error {
	l.mu.Lock()
	l.draining.Store(true)
	if l.inflight == 0 {
		l.mu.Unlock()
		return nil
	}
	if l.idle == nil {
		l.idle = make(chan struct{})
	}
	idle := l.idle
	l.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// InFlight is how many requests are being served.
func (l *Lifecycle) InFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inflight
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
