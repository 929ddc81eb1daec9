package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sync"
	"time"
)

// What the proxy caches of the upstream (its tools/list, its
// server/discover) is a CacheableResult, kept as the result says of
// itself (SEP-2549): "public" may be served to every principal, anything
// else only to the principal it was fetched for; ttlMs 0 is stale at
// once. cacheScope and ttlMs are required in 2026-07-28, so an upstream
// that leaves them out (a 2025 server, a sloppy one) gets the reading
// that cannot leak or go stale: private, ttlMs 0, as the conformance
// suite's own mock servers default them.

// cacheHint is what a CacheableResult says of itself.
type cacheHint struct {
	public bool
	ttl    time.Duration
}

// hintOf reads cacheScope and ttlMs (nil: absent).
func hintOf(scope string, ttlMs *int64) cacheHint {
	h := cacheHint{public: scope == "public"}
	if ttlMs != nil && *ttlMs > 0 {
		h.ttl = time.Duration(*ttlMs) * time.Millisecond
	}
	return h
}

// and is the hint of a result read in pages: the shortest ttl, and
// private if any page is.
func (h cacheHint) and(o cacheHint) cacheHint {
	return cacheHint{public: h.public && o.public, ttl: min(h.ttl, o.ttl)}
}

// scope is the hint's cacheScope.
func (h cacheHint) scope() string {
	if h.public {
		return "public"
	}
	return "private"
}

// cached is one fetched value.
type cached[T any] struct {
	v       T
	err     error // a failed fetch, kept for failBackoff
	hint    cacheHint
	fetched time.Time
	exp     time.Time
}

// ttlLeft is how long the value stays fresh by its own hint, from now.
func (e *cached[T]) ttlLeft(now time.Time) time.Duration {
	return max(e.hint.ttl-now.Sub(e.fetched), 0)
}

type flight[T any] struct {
	done chan struct{}
	e    *cached[T]
}

// failBackoff is how long a failed fetch is remembered for its principal,
// so a failing upstream is not asked again on every call.
const failBackoff = 5 * time.Second

// scopedCache keeps one public value and, for results that are not
// public, a value per principal: at most max of them, none for longer
// than maxAge nor (when minAge > 0) for less than minAge: the proxy's own
// bounds; the upstream's ttl decides within them. Concurrent misses for
// one principal share one fetch.
type scopedCache[T any] struct {
	max    int
	minAge time.Duration
	maxAge time.Duration

	mu      sync.Mutex
	public  *cached[T]
	private map[string]*cached[T]
	flights map[string]*flight[T]
}

func newScopedCache[T any](limit int, minAge, maxAge time.Duration) *scopedCache[T] {
	return &scopedCache[T]{max: limit, minAge: min(max(minAge, 0), maxAge), maxAge: maxAge, private: map[string]*cached[T]{}, flights: map[string]*flight[T]{}}
}

// get returns the value fresh for principal, fetching it (as principal:
// fetch must carry its identity upstream) when there is none.
func (c *scopedCache[T]) get(ctx context.Context, principal string, fetch func(context.Context) (T, cacheHint, error)) *cached[T] {
	c.mu.Lock()
	now := time.Now()
	if e := c.public; e != nil && now.Before(e.exp) {
		c.mu.Unlock()
		return e
	}
	if e := c.private[principal]; e != nil && now.Before(e.exp) {
		c.mu.Unlock()
		return e
	}
	if f := c.flights[principal]; f != nil {
		c.mu.Unlock()
		select {
		case <-f.done:
			return f.e
		case <-ctx.Done():
			return &cached[T]{err: ctx.Err()}
		}
	}
	f := &flight[T]{done: make(chan struct{})}
	c.flights[principal] = f
	c.mu.Unlock()

	// The fetch outlives a caller that gives up: others may wait for it.
	v, hint, err := fetch(context.WithoutCancel(ctx))
	now = time.Now()
	e := &cached[T]{v: v, err: err, hint: hint, fetched: now, exp: now.Add(min(max(hint.ttl, c.minAge), c.maxAge))}
	if err != nil {
		e.hint, e.exp = cacheHint{}, now.Add(min(failBackoff, c.maxAge))
	}
	c.mu.Lock()
	delete(c.flights, principal)
	switch {
	case !e.exp.After(now): // ttlMs 0 without a floor: stale at once, kept by nobody
	case err == nil && hint.public:
		c.public = e
		delete(c.private, principal)
	default:
		c.putPrivate(principal, e, now)
	}
	c.mu.Unlock()
	f.e = e
	close(f.done)
	return e
}

// putPrivate stores e for principal within max: expired values go first,
// then the one that expires soonest.
func (c *scopedCache[T]) putPrivate(principal string, e *cached[T], now time.Time) {
	if _, ok := c.private[principal]; !ok && len(c.private) >= c.max {
		var soonest string
		var first *cached[T]
		for k, o := range c.private {
			if !now.Before(o.exp) {
				delete(c.private, k)
			} else if first == nil || o.exp.Before(first.exp) {
				soonest, first = k, o
			}
		}
		if len(c.private) >= c.max {
			delete(c.private, soonest)
		}
	}
	c.private[principal] = e
}

// size is how many values are kept (the public one counts).
func (c *scopedCache[T]) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.private)
	if c.public != nil {
		n++
	}
	return n
}

// cacheKey is whom a private result is kept for: the principal, and when
// the client's token goes upstream (--upstream-pass-token) that token's
// digest too, since two tokens of one user may carry different scopes and
// the upstream may list different tools for each. h are the headers the
// fetch sends upstream.
func cacheKey(principal string, h http.Header) string {
	a := h.Get("Authorization")
	if a == "" {
		return principal
	}
	sum := sha256.Sum256([]byte(a))
	return principal + "\x00" + hex.EncodeToString(sum[:16])
}
