package ledger

import (
	"context"
	"sync"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/ledger/internal/opcheck"
)

// memory is the in-process ledger: a map guarded by a mutex, with a heap
// of expiry times so expired entries go without scanning the map. Times
// are nanoseconds on the monotonic clock since the ledger was made.
type memory struct {
	mu       sync.Mutex
	max      int
	maxBytes int64
	bytes    int64 // cost of the entries in the map
	base     time.Time
	entries  map[string]*memEntry
	exp      expHeap
	closed   bool
}

type memEntry struct {
	op      string
	done    bool
	token   string
	fp      Fingerprint
	result  []byte
	expires int64
	sched   int64 // when its earliest heap item is due
}

// entryOverhead is what an entry costs besides its strings and result:
// the struct, its map slot and heap item, roughly.
const entryOverhead = 160

// cost is what e counts against the byte budget.
func (e *memEntry) cost() int64 {
	return int64(len(e.op)+len(e.token)+len(e.result)) + entryOverhead
}

func newMemory(o Options) *memory {
	if o.MaxEntries < 1 {
		o.MaxEntries = defaultMaxEntries
	}
	if o.MaxBytes < 1 {
		o.MaxBytes = defaultMaxBytes
	}
	return &memory{max: o.MaxEntries, maxBytes: o.MaxBytes, base: time.Now(), entries: make(map[string]*memEntry)}
}

func (m *memory) now() int64 { return int64(time.Since(m.base)) }

// live returns op's entry if it has not expired; callers hold mu.
func (m *memory) live(op string, now int64) *memEntry {
	e := m.entries[op]
	if e == nil || now >= e.expires {
		return nil
	}
	return e
}

// add stores a new entry and schedules its expiry; callers hold mu. An
// entry has one heap item; a later expiry (Finish) moves it lazily.
func (m *memory) add(e *memEntry) {
	if old := m.entries[e.op]; old != nil {
		m.bytes -= old.cost()
	}
	m.entries[e.op] = e
	m.bytes += e.cost()
	m.schedule(e)
	if len(m.exp) > 2*len(m.entries)+1024 {
		// Released entries leave their items behind until they are due;
		// rebuild so the heap stays proportional to the entries.
		m.exp = m.exp[:0]
		for _, e := range m.entries {
			e.sched = e.expires
			m.exp = append(m.exp, expItem{at: e.expires, e: e})
		}
		m.exp.init()
	}
}

// remove drops e from the map; callers hold mu.
func (m *memory) remove(e *memEntry) {
	delete(m.entries, e.op)
	m.bytes -= e.cost()
}

func (m *memory) schedule(e *memEntry) {
	e.sched = e.expires
	m.exp.push(expItem{at: e.expires, e: e})
}

// sweep drops expired entries. An item whose entry was replaced or
// removed is dropped; one whose entry now expires later is rescheduled.
func (m *memory) sweep(now int64) {
	for len(m.exp) > 0 && now >= m.exp[0].at {
		it := m.exp.pop()
		e := it.e
		switch {
		case m.entries[e.op] != e:
		case now >= e.expires:
			m.remove(e)
		case it.at == e.sched:
			m.schedule(e) // it expires later now: move its item
		}
	}
}

func (m *memory) Claim(ctx context.Context, op string, fp Fingerprint, lease time.Duration) (Claim, error) {
	if err := opcheck.Op(op); err != nil {
		return Claim{}, err
	}
	if err := ctx.Err(); err != nil {
		return Claim{}, err
	}
	token := opcheck.NewToken()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Claim{}, ErrClosed
	}
	now := m.now()
	m.sweep(now)
	if e := m.live(op, now); e != nil {
		switch {
		case e.fp != fp:
			return Claim{Status: Conflict}, nil
		case e.done:
			return Claim{Status: Finished, Result: opcheck.Clone(e.result)}, nil
		}
		return Claim{Status: InProgress}, nil
	}
	if _, ok := m.entries[op]; !ok && len(m.entries) >= m.max {
		return Claim{}, ErrFull
	}
	e := &memEntry{op: op, token: token, fp: fp, expires: now + int64(lease)}
	if m.bytes+e.cost() > m.maxBytes {
		// Expired entries went in sweep; the rest are live.
		return Claim{}, ErrFullBytes
	}
	m.add(e)
	return Claim{Status: Acquired, Token: token}, nil
}

func (m *memory) Finish(ctx context.Context, op, token string, fp Fingerprint, result []byte, ttl time.Duration) error {
	if err := opcheck.Finish(ctx, op, token); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	now := m.now()
	e := m.live(op, now)
	if e != nil && e.token != token {
		return ErrLost
	}
	if e != nil {
		// Recorded even over the byte budget: the effect has run, and
		// forgetting it would run it again (Claim refuses instead).
		m.bytes -= e.cost()
		e.done, e.fp, e.result, e.expires = true, fp, opcheck.Clone(result), now+int64(ttl)
		m.bytes += e.cost()
		if e.expires < e.sched {
			m.schedule(e) // sooner than its item: add one (the old is dropped)
		}
		return nil
	}
	if _, ok := m.entries[op]; !ok && len(m.entries) >= m.max {
		m.sweep(now)
		if len(m.entries) >= m.max {
			return ErrFull
		}
	}
	m.add(&memEntry{op: op, done: true, token: token, fp: fp, result: opcheck.Clone(result), expires: now + int64(ttl)})
	return nil
}

// InProcess reports whether l answers from this process's memory, without
// I/O: its calls need no deadline of their own.
func InProcess(l Ledger) bool {
	_, ok := l.(*memory)
	return ok
}

func (m *memory) Release(ctx context.Context, op, token string) error {
	if err := opcheck.Op(op); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if e := m.entries[op]; e != nil && !e.done && e.token == token {
		m.remove(e)
	}
	return nil
}

func (m *memory) Get(ctx context.Context, op string) (Entry, error) {
	if err := opcheck.Op(op); err != nil {
		return Entry{}, err
	}
	if err := ctx.Err(); err != nil {
		return Entry{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Entry{}, ErrClosed
	}
	e := m.live(op, m.now())
	if e == nil {
		return Entry{}, nil
	}
	if !e.done {
		return Entry{State: Pending, Fingerprint: e.fp}, nil
	}
	return Entry{State: Done, Fingerprint: e.fp, Result: opcheck.Clone(e.result)}, nil
}

func (m *memory) Ping(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	return ctx.Err()
}

func (m *memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.entries = nil
	m.bytes = 0
	m.exp = nil
	return nil
}

// len reports the live entries (tests).
func (m *memory) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(m.now())
	return len(m.entries)
}

type expItem struct {
	at int64
	e  *memEntry
}

// expHeap is a min-heap of expiry times, typed so that pushing costs no
// allocation (container/heap boxes every item in an interface).
type expHeap []expItem

func (h *expHeap) push(it expItem) {
	*h = append(*h, it)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[i].at >= a[p].at {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *expHeap) pop() expItem {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a[n] = expItem{}
	a = a[:n]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < n && a[l].at < a[small].at {
			small = l
		}
		if r := l + 1; r < n && a[r].at < a[small].at {
			small = r
		}
		if small == i {
			break
		}
		a[i], a[small] = a[small], a[i]
		i = small
	}
	*h = a
	return top
}

func (h *expHeap) init() {
	a := *h
	for i := len(a)/2 - 1; i >= 0; i-- {
		for j := i; ; {
			l, small := 2*j+1, j
			if l < len(a) && a[l].at < a[small].at {
				small = l
			}
			if r := l + 1; r < len(a) && a[r].at < a[small].at {
				small = r
			}
			if small == j {
				break
			}
			a[j], a[small] = a[small], a[j]
			j = small
		}
	}
}
