// Package opcheck holds what every ledger backend checks and makes the
// same way: operation ids, claim tokens and millisecond timings. It is
// shared by package ledger (memory) and the backends in ledger/sqlite and
// ledger/redis without growing ledger's public API.
package opcheck

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"sync/atomic"
	"time"
)

// ErrBadOperation is ledger.ErrBadOperation.
var ErrBadOperation = errors.New("ledger: bad operation id or token")

// maxOp bounds an operation id (the guard's are 22 characters).
const maxOp = 256

// Op checks an operation id.
func Op(op string) error {
	if op == "" || len(op) > maxOp {
		return ErrBadOperation
	}
	return nil
}

// Finish checks what every backend's Finish is given before it touches
// its store.
func Finish(ctx context.Context, op, token string) error {
	if err := Op(op); err != nil {
		return err
	}
	if len(token) != TokenLen {
		return ErrBadOperation
	}
	return ctx.Err()
}

// TokenLen is the length of a claim token: 16 bytes in hex.
const TokenLen = 32

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

// NewToken returns a claim token unique to this claim.
func NewToken() string {
	var b [TokenLen / 2]byte
	copy(b[:8], tokenPrefix[:])
	binary.BigEndian.PutUint64(b[8:], tokenSeq.Add(1))
	return hex.EncodeToString(b[:])
}

// Ms is d in whole milliseconds, at least 1.
func Ms(d time.Duration) int64 {
	if m := d.Milliseconds(); m > 0 {
		return m
	}
	return 1
}

// Clone copies a stored result; a missing one is empty, never nil.
func Clone(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return append([]byte{}, b...)
}
