package ledger

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
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
	// ErrClosed: the ledger was closed.
	ErrClosed = errors.New("ledger: closed")
	// ErrBadOperation: an empty or oversized operation id or token.
	ErrBadOperation = errors.New("ledger: bad operation id or token")
)

// maxOp bounds an operation id (the guard's are 22 characters).
const maxOp = 256

func checkOp(op string) error {
	if op == "" || len(op) > maxOp {
		return ErrBadOperation
	}
	return nil
}

// checkFinish checks what every backend's Finish is given before it
// touches its store.
func checkFinish(ctx context.Context, op, token string) error {
	if err := checkOp(op); err != nil {
		return err
	}
	if len(token) != tokenLen {
		return ErrBadOperation
	}
	return ctx.Err()
}

// tokenLen is the length of a claim token: 16 bytes in hex.
const tokenLen = 32

// A token only has to be unique: it tells a claim's owner from a stale
// one, and no client ever sees it. 8 random bytes per process and an
// 8-byte counter make that cheaper than 16 random bytes per claim.
var (
	tokenPrefix = func() (p [8]byte) {
		if _, err := rand.Read(p[:]); err != nil {
			panic("ledger: crypto/rand failed: " + err.Error())
		}
		return p
	}()
	tokenSeq atomic.Uint64
)

func newToken() string {
	var b [tokenLen / 2]byte
	copy(b[:8], tokenPrefix[:])
	binary.BigEndian.PutUint64(b[8:], tokenSeq.Add(1))
	return hex.EncodeToString(b[:])
}

// Option configures Open.
type Option func(*options)

type options struct {
	prefix     string
	maxEntries int
}

// WithPrefix sets the Redis key prefix (default "mrtr:op:"), so several
// deployments or tests can share one Redis.
func WithPrefix(p string) Option { return func(o *options) { o.prefix = p } }

// WithMaxEntries bounds the memory ledger's live entries (default
// 1<<20). When full it refuses new claims (ErrFull): failing closed is
// safer than forgetting a finished operation.
func WithMaxEntries(n int) Option { return func(o *options) { o.maxEntries = n } }

const (
	defaultPrefix     = "mrtr:op:"
	defaultMaxEntries = 1 << 20
)

// Open opens the ledger a URL-like setting names:
//
//	memory:                       in this process (default for ""); memory:?max=N bounds it
//	sqlite:/var/lib/mrtr/ledger.db  an embedded SQLite file (also file:…), created on first use
//	redis://host:6379/0           Redis, for several instances (rediss:// for TLS;
//	                              ?prefix=… sets the key prefix)
//
// Open does not fail when Redis is down (instances start and fail closed
// per request); Ping checks it. Errors never repeat the setting, which
// may hold a password.
func Open(ctx context.Context, setting string, opts ...Option) (Ledger, error) {
	o := options{prefix: defaultPrefix, maxEntries: defaultMaxEntries}
	for _, f := range opts {
		f(&o)
	}
	scheme, rest, _ := strings.Cut(setting, ":")
	switch strings.ToLower(scheme) {
	case "", "memory":
		if q, ok := strings.CutPrefix(rest, "?"); ok {
			v, err := url.ParseQuery(q)
			if err != nil {
				return nil, errors.New("ledger: bad memory: options")
			}
			for k := range v {
				if k != "max" {
					return nil, fmt.Errorf("ledger: unknown memory: option %q", k)
				}
			}
			n, err := strconv.Atoi(v.Get("max"))
			if err != nil || n < 1 {
				return nil, errors.New("ledger: memory:?max= wants a positive integer")
			}
			o.maxEntries = n
		} else if rest != "" {
			return nil, errors.New("ledger: memory: takes no path")
		}
		return newMemory(o), nil
	case "sqlite", "file":
		path := strings.TrimPrefix(rest, "//")
		if path == "" {
			return nil, errors.New("ledger: sqlite: needs a file path, as in sqlite:/var/lib/mrtr/ledger.db")
		}
		return OpenSQLite(ctx, path)
	case "redis", "rediss":
		return openRedisURL(setting, o)
	}
	return nil, fmt.Errorf("ledger: unknown ledger scheme %q (want memory:, sqlite:, file: or redis://)", scheme)
}

// NewMemory returns an in-process ledger, bounded in entries and time.
func NewMemory(opts ...Option) Ledger {
	o := options{prefix: defaultPrefix, maxEntries: defaultMaxEntries}
	for _, f := range opts {
		f(&o)
	}
	return newMemory(o)
}

func ms(d time.Duration) int64 {
	if m := d.Milliseconds(); m > 0 {
		return m
	}
	return 1
}
