package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"
)

type principalKey struct{}

// WithPrincipal marks ctx with the principal a call is made for: a
// PerPrincipal upstream gives each principal a child of its own.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

func principalOf(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// PerPrincipal is a stdio upstream with one supervised child per
// principal when the child speaks an earlier revision (a 2026-07-28 child
// keeps no session state, and one serves everybody), so two users never share a legacy server's session state (a
// server of the 2025 era keeps per-session state: roots, subscriptions,
// logging level, whatever the server keeps in memory). Children start on
// demand, are stopped after Idle without a call, and at most Max run at
// once (the least recently used idle one makes room). A child whose only
// calls wait for a client's answer to its server-to-client request (a
// round) for longer than hold makes room as well: it is stopped, and those
// calls fail (their rounds' retries are told to call again). With neither,
// a new principal gets CodeUnavailable with a RetryAfter: when the first
// such child becomes free to take, or 5 s. So no set of principals keeps
// another out for longer than hold (children busy with calls that are
// not waiting are bounded by the call timeout). Calls made for no
// principal (the proxy's own tools/list) share one child of their own.
type PerPrincipal struct {
	cfg  StdioConfig
	max  int
	idle time.Duration
	hold time.Duration

	mu       sync.Mutex
	children map[string]*principalChild
	probe    *Stdio // the first child: identity and era
	closed   bool
	starting int // children being started, counted against max
	// opening is closed when the start of that principal's child ends:
	// the principal's other first calls wait for it rather than start
	// children of their own, which would count against max for everyone.
	opening map[string]chan struct{}
	stop    chan struct{}
}

type principalChild struct {
	s        *Stdio
	last     time.Time
	inflight int
	// waiting are its calls whose server-to-client request waits for the
	// client's answer, by when they asked (under PerPrincipal.mu).
	waiting map[*roundWait]struct{}
}

// roundWait is one call's server-to-client requests that wait for an
// answer, by the child's id of each, with when they were asked.
type roundWait struct{ asked map[string]time.Time }

// DefaultRoundHold is how long a waiting round keeps its principal's child
// from a principal that finds every child busy.
const DefaultRoundHold = time.Minute

// takeableAt is when c may be stopped for another principal: its calls
// all wait for rounds, the youngest for hold. ok is false while any call
// of it is not waiting.
func (c *principalChild) takeableAt(hold time.Duration) (at time.Time, ok bool) {
	if c.inflight == 0 || c.inflight != len(c.waiting) {
		return time.Time{}, false
	}
	for w := range c.waiting {
		for _, since := range w.asked {
			if since.After(at) {
				at = since
			}
		}
	}
	return at.Add(hold), true
}

// NewPerPrincipal starts one child (for no principal) to learn the
// upstream's era, then starts the others on demand.
func NewPerPrincipal(ctx context.Context, cfg StdioConfig, max int, idle time.Duration) (*PerPrincipal, error) {
	if max <= 0 {
		max = 16
	}
	if idle <= 0 {
		idle = 10 * time.Minute
	}
	hold := cfg.RoundHold
	if hold <= 0 {
		hold = DefaultRoundHold
	}
	if cfg.queued == nil { // one budget for every child
		cfg.queued = newByteBudget(cfg.MaxQueued)
	}
	first, err := NewStdio(ctx, cfg)
	if err != nil {
		return nil, err
	}
	p := &PerPrincipal{cfg: cfg, max: max, idle: idle, hold: hold, probe: first,
		children: map[string]*principalChild{"": {s: first, last: time.Now()}}, opening: map[string]chan struct{}{}, stop: make(chan struct{})}
	go p.reap()
	return p, nil
}

func (p *PerPrincipal) reap() {
	t := time.NewTicker(min(p.idle/4, 30*time.Second))
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		var gone []*Stdio
		p.mu.Lock()
		for k, c := range p.children {
			if k != "" && c.inflight == 0 && time.Since(c.last) > p.idle {
				gone = append(gone, c.s)
				delete(p.children, k)
			}
		}
		p.mu.Unlock()
		for _, s := range gone {
			_ = s.Close()
		}
	}
}

// get returns principal's child, starting it if need be; release must be
// called when the call is over.
func (p *PerPrincipal) get(ctx context.Context, principal string) (*Stdio, *principalChild, func(), error) {
	if _, legacy := p.probe.Discovery(); !legacy {
		// A 2026-07-28 server keeps no session state: one child serves all.
		principal = ""
	}
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, nil, nil, Errorf(CodeClosed, "the upstream is closed", nil)
		}
		if c, ok := p.children[principal]; ok {
			c.inflight++
			p.mu.Unlock()
			return c.s, c, p.releaser(c), nil
		}
		opening, ok := p.opening[principal]
		if !ok {
			break
		}
		p.mu.Unlock()
		select {
		case <-opening:
		case <-ctx.Done():
			return nil, nil, nil, transportError(ctx, ctx.Err())
		}
		p.mu.Lock()
	}
	var evict *Stdio
	var evictErr *Error
	// The no-principal child does not count; children still starting do,
	// or concurrent first calls of new principals would all start one.
	if len(p.children)-1+p.starting >= p.max {
		now := time.Now()
		var lruKey string
		var lru *principalChild
		for k, c := range p.children {
			if k != "" && c.inflight == 0 && (lru == nil || c.last.Before(lru.last)) {
				lruKey, lru = k, c
			}
		}
		if lru == nil {
			// None idle: a child whose calls have all waited for rounds
			// past hold, the least recently used, makes room.
			var soonest time.Time
			for k, c := range p.children {
				at, ok := c.takeableAt(p.hold)
				switch {
				case k == "" || !ok:
				case !at.After(now):
					if lru == nil || c.last.Before(lru.last) {
						lruKey, lru = k, c
					}
				case soonest.IsZero() || at.Before(soonest):
					soonest = at
				}
			}
			if lru == nil {
				p.mu.Unlock()
				e := &Error{Code: CodeUnavailable, RetryAfter: 5 * time.Second,
					Message: "every upstream child (--max-children) is busy with other users' calls: try again later"}
				if !soonest.IsZero() {
					e.RetryAfter = soonest.Sub(now)
					e.Message = "every upstream child (--max-children) is held by other users' calls that wait for their answers: one is freed for you after --child-round-hold; try again then"
				}
				return nil, nil, nil, e
			}
			evictErr = Errorf(CodeUnavailable, "the call waited for its client's answer longer than --child-round-hold while other users needed a child: its child was stopped for them", nil)
		}
		delete(p.children, lruKey)
		evict = lru.s
	}
	p.starting++
	opening := make(chan struct{})
	p.opening[principal] = opening
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.opening, principal)
		p.mu.Unlock()
		close(opening)
	}()
	if evict != nil {
		if evictErr != nil {
			_ = evict.closeWith(evictErr)
		} else {
			_ = evict.Close()
		}
	}
	s, err := NewStdio(ctx, p.cfg)
	p.mu.Lock()
	p.starting--
	if err != nil {
		p.mu.Unlock()
		return nil, nil, nil, err
	}
	if p.closed { // Close came while the child started: it is not Close's to stop
		p.mu.Unlock()
		_ = s.Close()
		return nil, nil, nil, Errorf(CodeClosed, "the upstream is closed", nil)
	}
	if c, ok := p.children[principal]; ok { // started meanwhile by another call
		c.inflight++
		p.mu.Unlock()
		_ = s.Close()
		return c.s, c, p.releaser(c), nil
	}
	c := &principalChild{s: s, last: time.Now(), inflight: 1}
	p.children[principal] = c
	p.mu.Unlock()
	return s, c, p.releaser(c), nil
}

func (p *PerPrincipal) releaser(c *principalChild) func() {
	return func() {
		p.mu.Lock()
		c.inflight--
		c.last = time.Now()
		p.mu.Unlock()
	}
}

// Call sends msg to the child of the principal ctx names. A call
// WithRounds counts as waiting while a server-to-client request it passed
// on has no answer (Send of a response with its id) and the call goes on.
func (p *PerPrincipal) Call(ctx context.Context, msg []byte, h http.Header, onMessage func(raw []byte) error) ([]byte, error) {
	s, c, release, err := p.get(ctx, principalOf(ctx))
	if err != nil {
		return nil, err
	}
	defer release()
	if hasRounds(ctx) && onMessage != nil {
		w := &roundWait{asked: map[string]time.Time{}}
		defer func() {
			p.mu.Lock()
			delete(c.waiting, w)
			p.mu.Unlock()
		}()
		on := onMessage
		onMessage = func(raw []byte) error {
			if m, err := parseMessage(raw); err == nil && m.hasID && m.method != "" {
				p.mu.Lock()
				w.asked[string(m.value(m.id))] = time.Now()
				if c.waiting == nil {
					c.waiting = map[*roundWait]struct{}{}
				}
				c.waiting[w] = struct{}{}
				p.mu.Unlock()
			}
			return on(raw)
		}
	}
	return s.Call(ctx, msg, h, onMessage)
}

// Send delivers msg to the child of the principal ctx names. A response
// (the answer to the child's request) ends the child's waits.
func (p *PerPrincipal) Send(ctx context.Context, msg []byte, h http.Header) error {
	s, c, release, err := p.get(ctx, principalOf(ctx))
	if err != nil {
		return err
	}
	defer release()
	if m, err := parseMessage(msg); err == nil && m.hasID && m.method == "" {
		id := string(m.value(m.id))
		p.mu.Lock()
		for w := range c.waiting {
			if delete(w.asked, id); len(w.asked) == 0 {
				delete(c.waiting, w)
			}
		}
		p.mu.Unlock()
	}
	return s.Send(ctx, msg, h)
}

// QueuedBytes is how many bytes wait for slow readers, all children together.
func (p *PerPrincipal) QueuedBytes() int64 { return p.cfg.queued.held() }

// ID is the command's id, whichever child serves.
func (p *PerPrincipal) ID() string { return p.probe.ID() }

// Discovery is what the first child answered.
func (p *PerPrincipal) Discovery() (json.RawMessage, bool) { return p.probe.Discovery() }

// Children is how many children run now (the no-principal one included).
func (p *PerPrincipal) Children() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.children)
}

// Health follows the first child: the others run the same command.
func (p *PerPrincipal) Health() error { return p.probe.Health() }

// Close stops every child.
func (p *PerPrincipal) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.stop)
	all := p.children
	p.children = nil
	p.mu.Unlock()
	var errs []error
	for _, c := range all {
		errs = append(errs, c.s.Close())
	}
	return errors.Join(errs...)
}
