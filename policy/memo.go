package policy

import (
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

// A policy here is a pure function of its input: Load allows no builtin
// that reads the clock, the network or randomness. So the decision for an
// input already seen is that input's decision until the policy changes,
// and each loaded policy keeps its own memo (Reload starts a new one).
// Asks repeat the same schemas over and over; this is what keeps the
// policy's share of a request small (see the benchmarks).

const memoMax = 4096

type memo struct {
	mu sync.RWMutex
	m  map[[32]byte]*Decision
}

func newMemo() *memo { return &memo{m: make(map[[32]byte]*Decision, 64)} }

func (m *memo) get(k [32]byte) *Decision {
	m.mu.RLock()
	d := m.m[k]
	m.mu.RUnlock()
	return d
}

func (m *memo) put(k [32]byte, d *Decision) {
	m.mu.Lock()
	if len(m.m) >= memoMax {
		for old := range m.m { // map order is random: a random eviction
			delete(m.m, old)
			break
		}
	}
	m.m[k] = d
	m.mu.Unlock()
}

// memoKey digests everything of q the policy can see (the principal only
// when the policy reads it), as the host sent it: a cheap key that only an
// identical query hits, and that needs no call into the guard core.
func memoKey(entry byte, q *host.PolicyQuery, withPrincipal bool) [32]byte {
	h := sha256.New()
	var b [8]byte
	str := func(s string) {
		binary.LittleEndian.PutUint64(b[:], uint64(len(s)))
		h.Write(b[:])
		h.Write([]byte(s))
	}
	h.Write([]byte{entry})
	if q.Input != nil {
		// A query with its input given is that input.
		h.Write([]byte{'i'})
		h.Write(q.Input)
	} else {
		str(q.Method)
		str(q.Target)
		if withPrincipal {
			str(q.Principal)
		}
		binary.LittleEndian.PutUint64(b[:], uint64(q.TTL/time.Second))
		h.Write(b[:])
		binary.LittleEndian.PutUint64(b[:], uint64(q.MaxRounds))
		h.Write(b[:])
		if entry == 'a' {
			binary.LittleEndian.PutUint64(b[:], uint64(len(q.Inputs)))
			h.Write(b[:])
			for _, in := range q.Inputs {
				str(in.Key)
				str(in.Method)
				str(string(in.Params))
			}
		}
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// readsPrincipal reports whether any rule can see input.principal (or
// the whole input). The compiler has made every use of input a ref.
func readsPrincipal(c *ast.Compiler) bool {
	used := false
	for _, m := range c.Modules {
		ast.WalkRefs(m, func(r ast.Ref) bool {
			if used || !r[0].Equal(ast.InputRootDocument) {
				return used
			}
			if len(r) < 2 {
				used = true
				return true
			}
			if s, ok := r[1].Value.(ast.String); !ok || s == "principal" {
				used = true
			}
			return used
		})
	}
	return used
}
