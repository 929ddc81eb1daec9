package ledger

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/ledger/internal/opcheck"
)

// Fingerprint identifies the answers an operation was claimed with (a
// SHA-256). The ledger compares fingerprints; it never sees the answers.
type Fingerprint [32]byte

// Status is what a Claim found.
type Status int

const (
	// Acquired: the caller owns the operation. Run the effect, then Finish
	// (success) or Release (failure) with Claim.Token.
	Acquired Status = iota + 1
	// InProgress: another claim with the same fingerprint holds the
	// operation and its lease has not run out. Ask again later.
	InProgress
	// Finished: the operation is done; Claim.Result is its result.
	Finished
	// Conflict: the operation is held or done with another fingerprint.
	Conflict
)

func (s Status) String() string {
	switch s {
	case Acquired:
		return "acquired"
	case InProgress:
		return "in_progress"
	case Finished:
		return "finished"
	case Conflict:
		return "conflict"
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// Claim is the answer to Ledger.Claim.
type Claim struct {
	Status Status
	// Token proves ownership to Finish and Release (Acquired only).
	Token string
	// Result is the stored result (Finished only).
	Result []byte
}

// State is the state of an entry, as Get reports it.
type State int

const (
	// Absent: never claimed, released, or expired.
	Absent State = iota
	// Pending: claimed, lease running.
	Pending
	// Done: finished; the result is stored until the entry expires.
	Done
)

// Entry is what Get reports.
type Entry struct {
	State       State
	Fingerprint Fingerprint
	Result      []byte
}

// Ledger records which operations ran and what they returned. Every
// method is atomic with respect to every other caller of the same store,
// in this process or another.
type Ledger interface {
	// Claim takes op for the caller unless it is already held (lease
	// running) or done. An expired claim counts as absent. A claim is kept
	// for lease, then it expires unless finished.
	Claim(ctx context.Context, op string, fp Fingerprint, lease time.Duration) (Claim, error)
	// Finish records result as op's result for ttl. It succeeds when op
	// is held by token, already finished by token (a retried Finish), or
	// absent (the lease ran out and nobody else claimed it: the effect did
	// run, so record it). It fails with ErrLost when another claim holds
	// or finished op: a stale owner never overwrites.
	Finish(ctx context.Context, op, token string, fp Fingerprint, result []byte, ttl time.Duration) error
	// Release drops op's claim if token still holds it and it is not
	// finished, so the operation can be tried again now.
	Release(ctx context.Context, op, token string) error
	// Get reports op's entry.
	Get(ctx context.Context, op string) (Entry, error)
	// Ping checks that the store answers.
	Ping(ctx context.Context) error
	// Close releases what Open opened.
	Close() error
}

var (
	// ErrLost: Finish found op held or finished by another claim.
	ErrLost = errors.New("ledger: the claim was lost: another claim holds or finished the operation")
	// ErrFull: the memory ledger holds its maximum of live entries. It
	// refuses new claims rather than forget finished ones.
	ErrFull = errors.New("ledger: full: too many live operations")
	// ErrFullBytes: the memory ledger's byte budget (WithMaxBytes) is
	// taken by live entries. errors.Is(ErrFullBytes, ErrFull) holds: the
	// same refusal, retryable once entries expire.
	ErrFullBytes error = fullBytes{}
	// ErrClosed: the ledger was closed.
	ErrClosed = errors.New("ledger: closed")
	// ErrBadOperation: an empty or oversized operation id or token.
	ErrBadOperation = opcheck.ErrBadOperation
	// ErrUnavailable wraps a store's own failure in a call that also ran
	// an effect (a transactional Once, see Op), to tell it from the
	// effect's errors, which come back as they are.
	ErrUnavailable = errors.New("ledger: the store is unavailable")
)

// Op is one operation as host.Guard.OnceTx hands it to a store that runs
// the effect inside its claim (ledger/postgres's OnceTx): claim ID with
// Fingerprint for at most Lease, and keep the result for TTL.
type Op struct {
	ID          string
	Fingerprint Fingerprint
	Lease, TTL  time.Duration
}

// Option configures Open and the backends' constructors.
type Option func(*Options)

// Options is what the Options given to Open set; a backend registered
// with Register reads it.
type Options struct {
	// Prefix is the Redis key prefix.
	Prefix string
	// MaxEntries bounds the memory ledger's live entries.
	MaxEntries int
	// MaxBytes bounds the bytes of the memory ledger's live entries.
	MaxBytes int64
	// WaitReplicas and WaitTimeout: Redis waits (WAIT) for this many
	// replicas to acknowledge each claim and result (0: it does not).
	WaitReplicas int
	WaitTimeout  time.Duration
}

type fullBytes struct{}

func (fullBytes) Error() string {
	return "ledger: full: the byte budget is taken by live operations' results"
}
func (fullBytes) Is(target error) bool { return target == ErrFull }

// ApplyOptions returns the defaults with opts applied.
func ApplyOptions(opts ...Option) Options {
	o := Options{Prefix: defaultPrefix, MaxEntries: defaultMaxEntries, MaxBytes: defaultMaxBytes}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithPrefix sets the Redis key prefix (default "mrtr:op:"), so several
// deployments or tests can share one Redis.
func WithPrefix(p string) Option { return func(o *Options) { o.Prefix = p } }

// WithMaxEntries bounds the memory ledger's live entries (default
// 1<<20). When full it refuses new claims (ErrFull): failing closed is
// safer than forgetting a finished operation.
func WithMaxEntries(n int) Option { return func(o *Options) { o.MaxEntries = n } }

// WithMaxBytes bounds the bytes the memory ledger keeps in live entries
// (default 256 MiB): each entry's stored result, operation id and token,
// plus entryOverhead for the entry itself. A claim that would go over it
// is refused (ErrFullBytes) once expired entries are dropped: a live one
// is never forgotten, since forgetting it would run its effect again. A
// Finish always records (the effect has run), so the ledger may go over
// by the results of the claims in flight, which their requests hold in
// memory already.
func WithMaxBytes(n int64) Option { return func(o *Options) { o.MaxBytes = n } }

// WithReplicaAck makes the Redis ledger wait until n replicas
// acknowledge each claim and each result (Redis WAIT), at most timeout,
// before the effect runs or Finish returns. Unacknowledged, the call
// fails closed with a retryable error. An acknowledged claim or result
// survives a failover to a replica that acknowledged it; an
// asynchronous replica without it may lose the last writes.
func WithReplicaAck(n int, timeout time.Duration) Option {
	return func(o *Options) { o.WaitReplicas, o.WaitTimeout = n, timeout }
}

const (
	defaultPrefix     = "mrtr:op:"
	defaultMaxEntries = 1 << 20
	defaultMaxBytes   = 256 << 20
)

// Opener opens a ledger from a whole setting ("redis://…").
type Opener func(ctx context.Context, setting string, o Options) (Ledger, error)

var (
	openersMu sync.RWMutex
	openers   = map[string]Opener{}
)

// Register makes Open accept settings with the given schemes. The
// backends outside this package register themselves when imported, so a
// program links only the stores it names:
//
//	import _ "github.com/mrtr-wasm/mrtr-wasm/ledger/redis"  // redis://, rediss://
//	import _ "github.com/mrtr-wasm/mrtr-wasm/ledger/sqlite" // sqlite:, file:
//	import _ "github.com/mrtr-wasm/mrtr-wasm/ledger/postgres" // postgres://, postgresql://
func Register(open Opener, schemes ...string) {
	openersMu.Lock()
	defer openersMu.Unlock()
	for _, s := range schemes {
		openers[strings.ToLower(s)] = open
	}
}

// backendPackage names the package that registers a scheme, for the
// error when it is not linked in.
var backendPackage = map[string]string{"sqlite": "sqlite", "file": "sqlite", "redis": "redis", "rediss": "redis",
	"redis+cluster": "redis", "rediss+cluster": "redis", "redis+sentinel": "redis", "rediss+sentinel": "redis",
	"valkey": "redis", "valkeys": "redis", "valkey+cluster": "redis", "valkeys+cluster": "redis",
	"valkey+sentinel": "redis", "valkeys+sentinel": "redis",
	"postgres": "postgres", "postgresql": "postgres"}

// Open opens the ledger a URL-like setting names:
//
//	memory:                       in this process (default for ""); memory:?max=N bounds its
//	                              entries, memory:?max_bytes=N its bytes
//	sqlite:/var/lib/mrtr/ledger.db  an embedded SQLite file (also file:…), created on first use
//	redis://host:6379/0           Redis, for several instances (rediss:// for TLS;
//	                              ?prefix=… sets the key prefix)
//	redis+cluster://h1:7000?addr=h2:7000  Redis Cluster from its seed nodes
//	redis+sentinel://s1:26379?master_name=m&addr=s2:26379  the master a Sentinel set names
//	                              (see ledger/redis for every option: password_file,
//	                              wait_replicas, wait_timeout; valkey… schemes alike)
//	postgres://user@host/db       PostgreSQL, for several instances (pgx's URL:
//	                              ?search_path=… names the table's schema)
//
// memory: is always there; sqlite:, redis:// and postgres:// need their
// package imported (see Register). Open does not fail when Redis is down
// (instances start and fail closed per request); Ping checks it. It does
// fail when PostgreSQL is down, as it creates its table then. Errors never
// repeat the setting, which may hold a password.
func Open(ctx context.Context, setting string, opts ...Option) (Ledger, error) {
	o := ApplyOptions(opts...)
	scheme, rest, _ := strings.Cut(setting, ":")
	scheme = strings.ToLower(scheme)
	if scheme == "" || scheme == "memory" {
		return openMemory(rest, o)
	}
	openersMu.RLock()
	open := openers[scheme]
	openersMu.RUnlock()
	if open != nil {
		return open(ctx, setting, o)
	}
	if pkg, ok := backendPackage[scheme]; ok {
		return nil, fmt.Errorf("ledger: the %s: backend is not linked into this program: import _ \"github.com/mrtr-wasm/mrtr-wasm/ledger/%s\"", scheme, pkg)
	}
	return nil, fmt.Errorf("ledger: unknown ledger scheme %q (want memory:, sqlite:, file:, redis://, redis+cluster://, redis+sentinel:// or postgres://)", scheme)
}

func openMemory(rest string, o Options) (Ledger, error) {
	if q, ok := strings.CutPrefix(rest, "?"); ok {
		v, err := url.ParseQuery(q)
		if err != nil {
			return nil, errors.New("ledger: bad memory: options")
		}
		for k := range v {
			if k != "max" && k != "max_bytes" {
				return nil, fmt.Errorf("ledger: unknown memory: option %q", k)
			}
		}
		if v.Has("max") {
			n, err := strconv.Atoi(v.Get("max"))
			if err != nil || n < 1 {
				return nil, errors.New("ledger: memory:?max= wants a positive integer")
			}
			o.MaxEntries = n
		}
		if v.Has("max_bytes") {
			n, err := strconv.ParseInt(v.Get("max_bytes"), 10, 64)
			if err != nil || n < 1 {
				return nil, errors.New("ledger: memory:?max_bytes= wants a positive integer (bytes)")
			}
			o.MaxBytes = n
		}
	} else if rest != "" {
		return nil, errors.New("ledger: memory: takes no path")
	}
	return newMemory(o), nil
}

// NewMemory returns an in-process ledger, bounded in entries and time.
func NewMemory(opts ...Option) Ledger {
	return newMemory(ApplyOptions(opts...))
}
