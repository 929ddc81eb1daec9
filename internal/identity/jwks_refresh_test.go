package identity

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// testIssuer is a real JWKS endpoint whose keys and Cache-Control a test
// changes, counting its reads.
type testIssuer struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	keys    map[string]*ecdsa.PrivateKey
	header  http.Header
	fail    bool
	fetches atomic.Int64
}

const testIss, testAud = "https://as.example", "https://rs.example/mcp"

func newTestIssuer(t *testing.T, header http.Header, kids ...string) *testIssuer {
	is := &testIssuer{t: t, keys: map[string]*ecdsa.PrivateKey{}, header: header}
	for _, kid := range kids {
		is.keys[kid], _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		is.mu.Lock()
		defer is.mu.Unlock()
		if is.fail {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		var set jose.JSONWebKeySet
		for kid, k := range is.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: "ES256", Use: "sig"})
		}
		for k, v := range is.header {
			w.Header()[k] = v
		}
		json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(is.srv.Close)
	return is
}

// drop stops publishing kid (the issuer retired it), keeping the private
// key so that the test can go on signing with it, as an attacker would.
func (is *testIssuer) drop(kid string) *ecdsa.PrivateKey {
	is.mu.Lock()
	defer is.mu.Unlock()
	k := is.keys[kid]
	delete(is.keys, kid)
	return k
}

func (is *testIssuer) key(kid string) *ecdsa.PrivateKey {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.keys[kid]
}

func signES256(t *testing.T, k *ecdsa.PrivateKey, kid, sub string) string {
	t.Helper()
	return signTyped(t, k, kid, sub, "")
}

// signTyped signs with a typ header (none when typ is "").
func signTyped(t *testing.T, k *ecdsa.PrivateKey, kid, sub, typ string) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithHeader("kid", kid)
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(map[string]any{"iss": testIss, "sub": sub, "aud": testAud, "exp": time.Now().Add(2 * time.Hour).Unix()}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// verifierAt is a Verifier of is whose clock reads base plus *offset.
func verifierAt(t *testing.T, is *testIssuer, offset *atomic.Int64) *Verifier {
	t.Helper()
	base := time.Now()
	v, err := NewVerifier(context.Background(), is.srv.Client(), testIss, testAud, is.srv.URL+"/keys")
	if err != nil {
		t.Fatal(err)
	}
	v.now = func() time.Time { return base.Add(time.Duration(offset.Load())) }
	return v
}

// logTo makes v log to a buffer the test can read while v writes.
func logTo(v *Verifier) *logBuffer {
	b := &logBuffer{}
	v.log = slog.New(slog.NewTextHandler(b, nil))
	return b
}

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestJWKSRefreshRetiresADroppedKey: the issuer drops k1 (say, after a
// compromise). The attacker's k1 tokens name a kid the verifier knows, so
// they never cause an unknown-kid refetch; the scheduled refresh (the
// JWKS's max-age) retires k1, for fresh tokens and for tokens verified
// and cached under it before.
func TestJWKSRefreshRetiresADroppedKey(t *testing.T) {
	is := newTestIssuer(t, http.Header{"Cache-Control": {"max-age=600"}}, "k1", "k2")
	var offset atomic.Int64
	v := verifierAt(t, is, &offset)
	logs := logTo(v)
	ctx := context.Background()
	cached := signES256(t, is.key("k1"), "k1", "alice")
	good := signES256(t, is.key("k2"), "k2", "bob")
	for _, tok := range []string{cached, good} {
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	k1 := is.drop("k1")
	fresh := signES256(t, k1, "k1", "mallory")
	// Until the refresh is due, k1 is still trusted: the issuer said its
	// JWKS is good for 600 s.
	if _, err := v.Verify(ctx, fresh); err != nil {
		t.Fatalf("before the refresh: %v", err)
	}

	offset.Store(int64(601 * time.Second))
	eventually(t, "the token cached under the dropped key is refused", func() bool {
		_, err := v.Verify(ctx, cached)
		return err != nil
	})
	for name, tok := range map[string]string{"cached": cached, "fresh": fresh, "the first fresh one, cached": fresh} {
		var te *TokenError
		if _, err := v.Verify(ctx, tok); !errors.As(err, &te) || te.Reason != ReasonKey {
			t.Errorf("%s k1 token after the refresh: want %s, got %v", name, ReasonKey, err)
		}
	}
	if c, err := v.Verify(ctx, good); err != nil || c.Subject != "bob" {
		t.Errorf("k2 token after the refresh: %v %v", c, err)
	}
	if l := logs.String(); !strings.Contains(l, "no longer has some keys") || !strings.Contains(l, "dropped=1") {
		t.Errorf("the log does not say a key was dropped:\n%s", l)
	}
}

// TestJWKSRefreshHonoursMaxAge: the JWKS is read again when its max-age
// (less its Age) has passed, clamped to [5 min, 1 h], 15 min without one;
// however many tokens arrive once it is due, it is read once.
func TestJWKSRefreshHonoursMaxAge(t *testing.T) {
	for _, c := range []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"max-age", http.Header{"Cache-Control": {"public, max-age=600"}}, 10 * time.Minute},
		{"max-age less Age", http.Header{"Cache-Control": {"max-age=900"}, "Age": {"300"}}, 10 * time.Minute},
		{"below the floor", http.Header{"Cache-Control": {"max-age=30"}}, 5 * time.Minute},
		{"no-store", http.Header{"Cache-Control": {"no-store"}}, 5 * time.Minute},
		{"no-cache", http.Header{"Cache-Control": {"max-age=3000", "no-cache"}}, 5 * time.Minute},
		{"malformed", http.Header{"Cache-Control": {"max-age="}}, 5 * time.Minute},
		{"above the ceiling", http.Header{"Cache-Control": {"max-age=86400"}}, time.Hour},
		{"none", nil, 15 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := newTestIssuer(t, c.header, "k1")
			var offset atomic.Int64
			v := verifierAt(t, is, &offset)
			tok := signES256(t, is.key("k1"), "k1", "alice")
			ctx := context.Background()
			verify := func() {
				t.Helper()
				if _, err := v.Verify(ctx, tok); err != nil {
					t.Fatal(err)
				}
			}
			verify()
			offset.Store(int64(c.want - 2*time.Second))
			verify()
			time.Sleep(100 * time.Millisecond)
			if n := is.fetches.Load(); n != 1 {
				t.Fatalf("read %d times before %s", n, c.want)
			}
			offset.Store(int64(c.want + 2*time.Second))
			var wg sync.WaitGroup
			for range 20 {
				wg.Go(verify)
			}
			wg.Wait()
			eventually(t, "the JWKS is read again", func() bool { return is.fetches.Load() == 2 })
			time.Sleep(100 * time.Millisecond)
			verify()
			if n := is.fetches.Load(); n != 2 {
				t.Fatalf("read %d times, want 2", n)
			}
		})
	}
}

// TestJWKSRefreshFailureKeepsTheKeys: an issuer that is down at the
// scheduled refresh does not lock everyone out; the verifier keeps its
// keys and tries again a minute later.
func TestJWKSRefreshFailureKeepsTheKeys(t *testing.T) {
	is := newTestIssuer(t, http.Header{"Cache-Control": {"max-age=300"}}, "k1")
	var offset atomic.Int64
	v := verifierAt(t, is, &offset)
	logs := logTo(v)
	tok := signES256(t, is.key("k1"), "k1", "alice")
	is.mu.Lock()
	is.fail = true
	is.mu.Unlock()
	offset.Store(int64(301 * time.Second))
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the scheduled read", func() bool { return is.fetches.Load() == 2 })
	time.Sleep(100 * time.Millisecond)
	offset.Store(int64(331 * time.Second))
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatalf("while the issuer is down: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := is.fetches.Load(); n != 2 {
		t.Fatalf("read %d times within a minute of a failure, want 2", n)
	}
	eventually(t, "the failed read is logged", func() bool {
		l := logs.String()
		return strings.Contains(l, "level=WARN") && strings.Contains(l, "could not be read again")
	})
	offset.Store(int64(362 * time.Second))
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the retry", func() bool { return is.fetches.Load() == 3 })
}

// TestAccessTokenType: a token with no typ, "JWT" or RFC 9068's "at+jwt"
// is verified; one typed as another kind of JWT (a logout token, a
// security event, a DPoP proof) is refused, however valid its claims.
func TestAccessTokenType(t *testing.T) {
	is := newTestIssuer(t, nil, "k1")
	var offset atomic.Int64
	v := verifierAt(t, is, &offset)
	for typ, ok := range map[string]bool{
		"": true, "JWT": true, "jwt": true, "application/jwt": true, "at+jwt": true, "application/at+jwt": true, "AT+JWT": true,
		"logout+jwt": false, "secevent+jwt": false, "dpop+jwt": false, "JOSE": false, "application/": false,
	} {
		_, err := v.Verify(context.Background(), signTyped(t, is.key("k1"), "k1", "alice", typ))
		var te *TokenError
		if ok && err != nil || !ok && (!errors.As(err, &te) || te.Reason != "type") {
			t.Errorf("typ %q: accepted %v, want %v (%v)", typ, err == nil, ok, err)
		}
	}
}
