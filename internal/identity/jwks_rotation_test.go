package identity

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// An unauthenticated client sends forged tokens (our iss, unknown kid, junk
// signature) and closes each connection at once: each spends a refetch of
// the limiter on a request context that is then cancelled, so the JWKS is
// never read, and a key the issuer rotated in (and publishes) stays unknown.
// TestJWKSRefetchSurvivesCallersThatHangUp: forged tokens with unknown
// key ids, from callers that hang up at once, must not use up the refetch
// limiter with fetches their own cancellation aborts, or a key the issuer
// rotated in stays unknown (every caller refused).
func TestJWKSRefetchSurvivesCallersThatHangUp(t *testing.T) {
	for _, abort := range []bool{true, false} {
		t.Run(fmt.Sprint("abort=", abort), func(t *testing.T) {
			const iss, aud = "https://as.example", "https://rs.example/mcp"
			var mu sync.Mutex
			var keys []jose.JSONWebKey
			publish := func(k *rsa.PrivateKey, kid string) {
				mu.Lock()
				keys = append(keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"})
				mu.Unlock()
			}
			idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(100 * time.Millisecond) // a remote IdP's round trip
				mu.Lock()
				defer mu.Unlock()
				json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: keys})
			}))
			defer idp.Close()
			k1, _ := rsa.GenerateKey(rand.Reader, 2048)
			publish(k1, "k1")
			v, err := NewVerifier(context.Background(), idp.Client(), iss, aud, idp.URL+"/keys")
			if err != nil {
				t.Fatal(err)
			}
			a := &Authenticator{verifier: v, log: slog.New(slog.DiscardHandler), sdk: sdkBridge}
			rs := httptest.NewServer(a.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
			defer rs.Close()

			k2, _ := rsa.GenerateKey(rand.Reader, 2048) // the issuer rotates
			publish(k2, "k2")
			s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: k2}, (&jose.SignerOptions{}).WithHeader("kid", "k2"))
			good, _ := jwt.Signed(s).Claims(map[string]any{"iss": iss, "sub": "alice", "aud": aud, "exp": time.Now().Add(time.Hour).Unix()}).Serialize()

			for i := range refetchBurst + 2 { // the attacker
				conn, err := net.Dial("tcp", strings.TrimPrefix(rs.URL, "http://"))
				if err != nil {
					t.Fatal(err)
				}
				conn.SetReadDeadline(time.Now().Add(time.Second))
				h := base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"alg":"RS256","kid":"junk-%d"}`, i)))
				c := base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"` + iss + `"}`))
				fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: rs\r\nConnection: close\r\nAuthorization: Bearer %s.%s.c2ln\r\nContent-Length: 0\r\n\r\n", h, c)
				if !abort {
					io.ReadAll(conn)
				}
				conn.Close()
				time.Sleep(150 * time.Millisecond)
			}
			req, _ := http.NewRequest("POST", rs.URL+"/mcp", nil)
			req.Header.Set("Authorization", "Bearer "+good)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("token of the published rotated-in key refused: %d %s", res.StatusCode, body)
			}
		})
	}
}

// TestDiscoveryRedirectMustMeetTheIssuerRules: a redirect from the
// issuer's https URL to plain http on another host is not followed.
func TestDiscoveryRedirectMustMeetTheIssuerRules(t *testing.T) {
	idp := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://idp.example/keys", http.StatusFound)
	}))
	defer idp.Close()
	var v map[string]any
	err := getJSON(context.Background(), idp.Client(), idp.URL+"/keys", &v)
	if err == nil || !strings.Contains(err.Error(), `a redirect "http://idp.example/keys"`) {
		t.Fatalf("want the redirect to plain http refused, got %v", err)
	}
}
