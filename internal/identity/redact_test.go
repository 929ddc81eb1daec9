package identity

import (
	"crypto/sha256"
	"testing"

	"golang.org/x/oauth2"

	"github.com/mrtr-wasm/mrtr-wasm/internal/redact/redacttest"
)

// The token table shows neither tokens nor their digests.
func TestTokensRedaction(t *testing.T) {
	const tok = "tok-secret-0123456789abcdef"
	tokens, err := NewTokens(map[string]string{tok: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	d := sha256.Sum256([]byte(tok))
	redacttest.Check(t, *tokens, []string{tok, string(d[:6])}, nil, "1 tokens")
}

// The sign-in client shows its id, never its secret.
func TestLoginRedaction(t *testing.T) {
	const secret = "client-secret-0123456789abcdef"
	l := &Login{cfg: oauth2.Config{ClientID: "crm-web", ClientSecret: secret}, clientID: "crm-web"}
	redacttest.Check(t, l, []string{secret}, nil, "crm-web")
}
