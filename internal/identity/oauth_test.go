package identity

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mrtr-wasm/mrtr-wasm/internal/oidcop"
)

const resource = "http://127.0.0.1:1/mcp"

// counting counts the requests to the JWKS.
type counting struct {
	n  atomic.Int32
	rt http.RoundTripper
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, "keys") {
		c.n.Add(1)
	}
	return c.rt.RoundTrip(r)
}

func build(t testing.TB, op *oidcop.OP, f Flags, log io.Writer) (*Authenticator, *counting) {
	t.Helper()
	f.Issuer = op.Issuer
	cnt := &counting{rt: http.DefaultTransport}
	if log == nil {
		log = io.Discard
	}
	a, err := f.Build(context.Background(), Options{
		PublicURL: "http://127.0.0.1:1", Logger: slog.New(slog.NewJSONHandler(log, nil)),
		HTTPClient: &http.Client{Transport: cnt, Timeout: 10 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a, cnt
}

func reason(err error) string {
	var te *TokenError
	if errors.As(err, &te) {
		return te.Reason
	}
	return "not a TokenError: " + err.Error()
}

// TestOAuthRealProvider checks the verifier against the tokens of a real
// OpenID provider (zitadel's example OP).
func TestOAuthRealProvider(t *testing.T) {
	op, other := oidcop.Start(t), oidcop.Start(t)
	a, jwks := build(t, op, Flags{Scopes: "mcp"}, nil)
	ctx := context.Background()

	alice := op.Token(t, "agent-alice", resource, "mcp", "crm:write")
	id, err := a.Authenticate(ctx, alice)
	if err != nil {
		t.Fatalf("a good token: %v", err)
	}
	if want := op.Issuer + "#agent-alice"; id.Principal != want {
		t.Fatalf("principal %q, want %q", id.Principal, want)
	}
	if strings.Join(id.Scopes, " ") != "mcp crm:write" || id.Claims["client_id"] != "agent-alice" {
		t.Fatalf("scopes %v claims %v", id.Scopes, id.Claims)
	}

	refused := func(name, tok, want string) {
		t.Helper()
		_, err := a.Authenticate(ctx, tok)
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		if got := reason(err); got != want {
			t.Fatalf("%s: reason %q, want %q", name, got, want)
		}
	}
	refused("no resource, so the wrong audience", op.Token(t, "agent-alice", "", "mcp"), ReasonAudience)
	refused("another resource", op.Token(t, "agent-alice", "http://127.0.0.1:2/mcp", "mcp"), ReasonAudience)
	refused("without the required scope", op.Token(t, "agent-alice", resource, "crm:write"), ReasonScope)
	refused("another issuer", other.Token(t, "agent-alice", resource, "mcp"), ReasonIssuer)
	refused("garbage", "not.a.jwt", ReasonMalformed)
	refused("empty", "", ReasonMissing)
	refused("too long", strings.Repeat("a", MaxTokenBytes+1), ReasonMalformed)

	// alg none and HMAC: the real token's claims under a forged header.
	parts := strings.Split(alice, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	refused("alg none", none, ReasonAlgorithm)
	// HS256 keyed with the issuer's public key: the key-confusion attack.
	var set jose.JSONWebKeySet
	res, err := http.Get(op.Issuer + "keys")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(res.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	pub, _ := json.Marshal(set.Keys[0])
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: pub}, nil)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	hs, _ := jws.CompactSerialize()
	refused("HS256", hs, ReasonAlgorithm)
	// A real header and claims with another token's signature.
	bob := op.Token(t, "agent-bob", resource, "mcp")
	refused("a signature from another token", parts[0]+"."+parts[1]+"."+strings.Split(bob, ".")[2], ReasonSignature)

	// An unknown kid: the provider signs with a key it does not publish.
	before := jwks.n.Load()
	op.Rotate(t, false)
	unknown := op.Token(t, "agent-alice", resource, "mcp")
	refused("an unknown kid", unknown, ReasonKey)
	if jwks.n.Load() != before+1 {
		t.Fatalf("an unknown kid should refetch the JWKS once, got %d fetches", jwks.n.Load()-before)
	}
	// A key rotated in (published) is accepted without a restart.
	op.Rotate(t, true)
	if _, err := a.Authenticate(ctx, op.Token(t, "agent-bob", resource, "mcp")); err != nil {
		t.Fatalf("a token signed with a rotated-in key: %v", err)
	}
	// Garbage kids cannot make it hammer the issuer: at most the burst,
	// then one per refetchEvery.
	before = jwks.n.Load()
	for range 20 {
		refused("an unknown kid again", unknown, ReasonKey)
	}
	if n := jwks.n.Load() - before; n > refetchBurst {
		t.Fatalf("20 unknown kids made %d JWKS fetches, want at most %d", n, refetchBurst)
	}

	// Expiry, through the verifier's clock (the provider's tokens live
	// five minutes): the cached token and a fresh one alike.
	v := a.Verifier()
	v.now = func() time.Time { return time.Now().Add(5*time.Minute + Leeway + time.Second) }
	refused("expired (cached)", alice, ReasonExpired)
	refused("expired", op.Token(t, "agent-alice", resource, "mcp"), ReasonExpired)
	v.now = func() time.Time { return time.Now().Add(5*time.Minute - time.Second) }
	if _, err := a.Authenticate(ctx, op.Token(t, "agent-alice", resource, "mcp")); err != nil {
		t.Fatalf("within its lifetime: %v", err)
	}
	v.now = func() time.Time { return time.Now().Add(-time.Minute) }
	refused("not valid yet", op.Token(t, "agent-alice", resource, "mcp"), ReasonNotYet)
	v.now = time.Now
}

// parseChallenge reads `Bearer k="v", k2="v2"` (RFC 6750 §3).
func parseChallenge(t *testing.T, h string) map[string]string {
	t.Helper()
	rest, ok := strings.CutPrefix(h, "Bearer")
	if !ok {
		t.Fatalf("not a Bearer challenge: %q", h)
	}
	out := map[string]string{}
	for _, p := range strings.Split(rest, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		k, v, ok := strings.Cut(p, "=")
		if !ok || len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
			t.Fatalf("bad auth-param %q in %q", p, h)
		}
		out[k] = v[1 : len(v)-1]
	}
	return out
}

func TestMiddlewareAndMetadata(t *testing.T) {
	op := oidcop.Start(t)
	var logs bytes.Buffer
	a, _ := build(t, op, Flags{Scopes: "mcp crm:read"}, &logs)
	mux := http.NewServeMux()
	a.RegisterMetadata(mux, "/mcp")
	mux.Handle("/mcp", a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, FromContext(r.Context()).Principal)
	})))
	ts := httptest.NewServer(mux)
	defer ts.Close()

	do := func(tok string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", ts.URL+"/mcp", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res, string(b)
	}
	metaURL := "http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp"
	res, _ := do("")
	ch := parseChallenge(t, res.Header.Get("WWW-Authenticate"))
	if res.StatusCode != 401 || ch["resource_metadata"] != metaURL || ch["scope"] != "mcp crm:read" || ch["error"] != "" {
		t.Fatalf("no token: %d %v", res.StatusCode, ch)
	}
	bad := op.Token(t, "agent-alice", "", "mcp", "crm:read")
	res, _ = do(bad)
	if ch := parseChallenge(t, res.Header.Get("WWW-Authenticate")); res.StatusCode != 401 || ch["error"] != "invalid_token" || ch["resource_metadata"] != metaURL {
		t.Fatalf("wrong audience: %d %v", res.StatusCode, ch)
	}
	few := op.Token(t, "agent-alice", resource, "mcp")
	res, _ = do(few)
	if ch := parseChallenge(t, res.Header.Get("WWW-Authenticate")); res.StatusCode != 403 || ch["error"] != "insufficient_scope" || ch["scope"] != "mcp crm:read" {
		t.Fatalf("too few scopes: %d %v", res.StatusCode, ch)
	}
	good := op.Token(t, "agent-alice", resource, "mcp", "crm:read")
	if res, body := do(good); res.StatusCode != 200 || body != op.Issuer+"#agent-alice" {
		t.Fatalf("good token: %d %s", res.StatusCode, body)
	}
	for _, tok := range []string{bad, few, good} {
		for _, part := range strings.Split(tok, ".") {
			if strings.Contains(logs.String(), part) {
				t.Fatal("a log line holds part of a token")
			}
		}
	}
	if !strings.Contains(logs.String(), `"auth":"audience"`) {
		t.Fatalf("the refusal's reason is not logged: %s", logs.String())
	}

	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		res, err := http.Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			ScopesSupported      []string `json:"scopes_supported"`
		}
		err = json.NewDecoder(res.Body).Decode(&m)
		res.Body.Close()
		if err != nil || m.Resource != resource || len(m.AuthorizationServers) != 1 || m.AuthorizationServers[0] != op.Issuer || strings.Join(m.ScopesSupported, " ") != "mcp crm:read" {
			t.Fatalf("%s: %v %+v", p, err, m)
		}
	}
}

func TestFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--auth-tokens", "t.json", "--oauth-issuer", "https://as.example"}, "cannot be combined"},
		{[]string{"--oauth-scopes", "mcp"}, "needs --oauth-issuer"},
		{[]string{"--oauth-client-id", "x"}, "needs --oauth-issuer"},
		{[]string{"--oauth-issuer", "http://as.example"}, "only for a loopback host"},
		{[]string{"--oauth-issuer", "https://as.example", "--oauth-client-secret-file", "s"}, "needs --oauth-client-id"},
		{[]string{"--oauth-issuer", "ftp://as.example"}, "not an absolute http(s) URL"},
		{[]string{"--oauth-issuer", "http://127.0.0.1:9/"}, ""},
		{[]string{"--oauth-issuer", "http://[::1]:9/"}, ""},
		{[]string{"--oauth-issuer", "https://as.example/tenant"}, ""},
	} {
		var f Flags
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		f.Register(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		err := f.Validate()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestDiscoverRFC8414 checks the fallback to RFC 8414 metadata (the path
// after the well-known part) for an issuer without OpenID discovery.
func TestDiscoverRFC8414(t *testing.T) {
	var issuer string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/oauth-authorization-server/tenant" {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "jwks_uri": issuer + "/keys"})
	}))
	defer ts.Close()
	issuer = ts.URL + "/tenant"
	m, err := Discover(context.Background(), http.DefaultClient, issuer)
	if err != nil || m.JWKSURI != issuer+"/keys" {
		t.Fatalf("%v %+v", err, m)
	}
	if _, err := Discover(context.Background(), http.DefaultClient, ts.URL+"/tenant/"); err == nil || !strings.Contains(err.Error(), "must match exactly") {
		t.Fatalf("the issuer with a trailing slash: %v", err)
	}
}

// TestLoginStart: the sign-in sends the browser to the issuer with PKCE
// S256, state and nonce, and its cookie is HttpOnly, SameSite=Lax,
// short-lived, and Secure once the public URL is not loopback; a public
// URL over plain http elsewhere is refused.
func TestLoginStart(t *testing.T) {
	op := oidcop.Start(t)
	f := Flags{Issuer: op.Issuer, ClientID: oidcop.ConnectClient}
	if _, err := f.Build(context.Background(), Options{PublicURL: "http://mcp.example.com"}); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("plain http public URL: %v", err)
	}
	for _, c := range []struct {
		public string
		secure bool
	}{{"https://mcp.example.com", true}, {"http://127.0.0.1:8080", false}} {
		a, err := f.Build(context.Background(), Options{PublicURL: c.public})
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		a.Login().Start(w, httptest.NewRequest("GET", "/connect/x", nil), "/connect/x")
		loc, err := url.Parse(w.Header().Get("Location"))
		if err != nil || w.Code != http.StatusSeeOther {
			t.Fatalf("%d %v", w.Code, err)
		}
		q := loc.Query()
		if q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) < 43 || len(q.Get("state")) < 43 || len(q.Get("nonce")) < 43 ||
			q.Get("redirect_uri") != c.public+"/connect/callback" || q.Get("client_id") != oidcop.ConnectClient {
			t.Fatalf("authorization request: %s", loc)
		}
		cookies := w.Result().Cookies()
		if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteLaxMode || cookies[0].MaxAge != 600 || cookies[0].Secure != c.secure {
			t.Fatalf("%s: cookie %+v", c.public, cookies)
		}
		// A callback with another browser's state, or none: refused.
		cb := httptest.NewRequest("GET", "/connect/callback?code=x&state="+q.Get("state"), nil)
		if _, err := a.Login().Finish(httptest.NewRecorder(), cb); err == nil {
			t.Fatal("a callback without the login cookie was accepted")
		}
	}
}

// TestLoginStartKeepsOtherPagesSignIns: opening one /connect page again
// and again evicts that page's own oldest sign-ins, never another
// user's pending one.
func TestLoginStartKeepsOtherPagesSignIns(t *testing.T) {
	l := &Login{pending: map[string]*pendingLogin{}, callback: "/connect/callback"}
	start := func(page string) string {
		w := httptest.NewRecorder()
		l.Start(w, httptest.NewRequest("GET", page, nil), page)
		loc, err := url.Parse(w.Header().Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		return loc.Query().Get("state")
	}
	alice := start("/connect/alice-link")
	var bob []string
	for i := 0; i < 3*maxPendingPerPage; i++ {
		bob = append(bob, start("/connect/bob-link"))
	}
	if _, ok := l.pending[alice]; !ok {
		t.Fatal("another page's sign-ins pushed alice's out")
	}
	if n := len(l.pending); n != 1+maxPendingPerPage {
		t.Fatalf("%d sign-ins pending, want alice's and bob's last %d", n, maxPendingPerPage)
	}
	if _, ok := l.pending[bob[len(bob)-1]]; !ok {
		t.Fatal("bob's newest sign-in is gone")
	}
}
