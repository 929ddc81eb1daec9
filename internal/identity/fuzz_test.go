package identity

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// FuzzVerify: any bytes as a bearer token give a *TokenError, never a
// panic or an acceptance (the verifier has no keys and may not fetch).
func FuzzVerify(f *testing.F) {
	for _, s := range []string{
		"", "a.b.c", "eyJhbGciOiJub25lIn0.e30.",
		"eyJhbGciOiJSUzI1NiIsImtpZCI6IngifQ.eyJpc3MiOiJodHRwczovL2FzLmV4YW1wbGUiLCJzdWIiOiJhIn0.c2ln",
		"eyJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJodHRwczovL2FzLmV4YW1wbGUifQ.AAAA",
	} {
		f.Add(s)
	}
	v := &Verifier{issuer: "https://as.example", audience: "https://rs.example/mcp",
		limiter: rate.NewLimiter(0, 0), cache: map[[32]byte]cachedToken{}, now: time.Now,
		nextRefresh: time.Now().Add(RefreshMax)} // no JWKS to refresh
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := v.Verify(context.Background(), tok)
		var te *TokenError
		if c != nil || !errors.As(err, &te) {
			t.Fatalf("%q: %v %v", tok, c, err)
		}
	})
}
