package identity

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Tokens maps bearer tokens to principals. Tokens are kept only as
// SHA-256 digests, so a lookup's timing says nothing about a token and a
// memory dump holds none.
type Tokens struct {
	byDigest map[[32]byte]string
}

// LoadTokens reads an --auth-tokens file: a JSON object mapping each
// bearer token to its principal name.
func LoadTokens(path string) (*Tokens, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth tokens: %w", err)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		// The error text could quote a token: give the position only.
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("auth tokens: %s is not valid JSON (offset %d); want an object mapping token to principal", path, se.Offset)
		}
		return nil, fmt.Errorf("auth tokens: %s must be a JSON object mapping token to principal", path)
	}
	return NewTokens(m)
}

// NewTokens builds Tokens from token → principal.
func NewTokens(m map[string]string) (*Tokens, error) {
	if len(m) == 0 {
		return nil, errors.New("auth tokens: no tokens")
	}
	t := &Tokens{byDigest: make(map[[32]byte]string, len(m))}
	i := 0
	for tok, p := range m {
		i++
		if len(tok) < 16 {
			return nil, fmt.Errorf("auth tokens: token number %d is shorter than 16 characters", i)
		}
		if strings.TrimSpace(p) == "" || p == Anonymous {
			return nil, fmt.Errorf("auth tokens: token number %d has an empty or reserved principal", i)
		}
		t.byDigest[sha256.Sum256([]byte(tok))] = p
	}
	return t, nil
}

// Principal returns the token's principal.
func (t *Tokens) Principal(token string) (string, bool) {
	p, ok := t.byDigest[sha256.Sum256([]byte(token))]
	return p, ok
}

// Len is the number of tokens.
func (t *Tokens) Len() int { return len(t.byDigest) }

// Verify is the SDK's auth.TokenVerifier.
func (t *Tokens) Verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	p, ok := t.Principal(token)
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: p}, nil
}
