package identity

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/time/rate"
)

// Algorithms are the only JWS algorithms accepted: never "none", never
// HMAC (whoever knows an HMAC key can mint tokens, and a public key
// misread as one is the classic confusion attack).
var Algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA}

// Leeway is the clock skew tolerated on exp, nbf and iat.
const Leeway = 30 * time.Second

// Why a token was refused: stable codes for logs and metrics, never the
// token.
const (
	ReasonMissing   = "missing"       // no bearer token
	ReasonMalformed = "malformed"     // not a compact JWS, or not JSON
	ReasonAlgorithm = "algorithm"     // alg outside Algorithms
	ReasonType      = "type"          // typ names another kind of JWT (see typeAllowed)
	ReasonIssuer    = "issuer"        // another issuer
	ReasonKey       = "unknown_key"   // kid not in the JWKS, even after a refetch
	ReasonSignature = "signature"     // the signature does not verify
	ReasonAudience  = "audience"      // aud does not name this resource
	ReasonExpired   = "expired"       // exp passed (beyond Leeway)
	ReasonNotYet    = "not_yet_valid" // nbf or iat in the future
	ReasonClaims    = "claims"        // exp or sub missing
	ReasonUnknown   = "unknown_token" // not in --auth-tokens
	ReasonScope     = "insufficient_scope"
)

// TokenError is a refused token: a Reason code and nothing of the token.
type TokenError struct{ Reason string }

func (e *TokenError) Error() string { return "invalid token (" + e.Reason + ")" }

func refuse(reason string) error { return &TokenError{Reason: reason} }

// ProviderMetadata is what discovery found about the authorization
// server (the members this package uses).
type ProviderMetadata struct {
	Issuer                string   `json:"issuer"`
	JWKSURI               string   `json:"jwks_uri"`
	AuthorizationEndpoint string   `json:"authorization_endpoint"`
	TokenEndpoint         string   `json:"token_endpoint"`
	ScopesSupported       []string `json:"scopes_supported"`
	CodeChallengeMethods  []string `json:"code_challenge_methods_supported"`
}

// CheckURL allows https, and plain http only for a loopback host.
func CheckURL(what, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("%s %q is not an absolute http(s) URL", what, raw)
	}
	if u.Scheme == "http" && !IsLoopback(u.Hostname()) {
		return nil, fmt.Errorf("%s %q: plain http is allowed only for a loopback host; use https", what, raw)
	}
	if u.User != nil || u.Fragment != "" {
		return nil, fmt.Errorf("%s %q must not carry user info or a fragment", what, raw)
	}
	return u, nil
}

// IsLoopback reports whether host is localhost or a loopback IP.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Discover reads the issuer's metadata: OpenID Connect Discovery first,
// then RFC 8414 (with the issuer's path after the well-known part). The
// document must name the very issuer asked for.
func Discover(ctx context.Context, client *http.Client, issuer string) (*ProviderMetadata, error) {
	u, err := CheckURL("--oauth-issuer", issuer)
	if err != nil {
		return nil, err
	}
	if u.RawQuery != "" {
		return nil, fmt.Errorf("--oauth-issuer %q must not have a query", issuer)
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	oidcURL := u.Scheme + "://" + u.Host + path + "/.well-known/openid-configuration"
	rfc8414 := u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + path
	var errs []error
	for _, where := range []string{oidcURL, rfc8414} {
		var m ProviderMetadata
		if err := getJSON(ctx, client, where, &m); err != nil {
			errs = append(errs, err)
			continue
		}
		if m.Issuer != issuer {
			return nil, fmt.Errorf("--oauth-issuer: %s names the issuer %q, not %q (they must match exactly, trailing slash included)", where, m.Issuer, issuer)
		}
		if m.JWKSURI == "" {
			return nil, fmt.Errorf("--oauth-issuer: %s has no jwks_uri", where)
		}
		for what, v := range map[string]string{"jwks_uri": m.JWKSURI, "authorization_endpoint": m.AuthorizationEndpoint, "token_endpoint": m.TokenEndpoint} {
			if v == "" {
				continue
			}
			if _, err := CheckURL(what, v); err != nil {
				return nil, fmt.Errorf("--oauth-issuer: %w", err)
			}
		}
		return &m, nil
	}
	return nil, fmt.Errorf("--oauth-issuer: no discovery document: %w", errors.Join(errs...))
}

func getJSON(ctx context.Context, client *http.Client, where string, v any) error {
	_, err := getJSONHeader(ctx, client, where, v)
	return err
}

// getJSONHeader is getJSON that also returns the response's header (for
// its Cache-Control).
func getJSONHeader(ctx context.Context, client *http.Client, where string, v any) (http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	c := *client
	c.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		// A redirect must meet the rules the issuer's URL met (https, or
		// http on loopback).
		if len(via) >= 5 {
			return errors.New("too many redirects")
		}
		_, err := CheckURL("a redirect", r.URL.String())
		return err
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", where, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", where, res.Status)
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(v); err != nil {
		return nil, fmt.Errorf("GET %s: not JSON: %w", where, err)
	}
	return res.Header, nil
}

// Verifier checks JWTs of one issuer for one audience. Its JWKS is
// fetched at start, again when a token names a kid it does not know (at
// most refetchBurst times in a row and then once per refetchEvery, so
// garbage kids cannot make it hammer the issuer), and on a schedule: the
// JWKS response's Cache-Control max-age (less its Age), clamped to
// [RefreshMin, RefreshMax], RefreshDefault without one. The scheduled
// read runs in the background when a token arrives after it is due; an
// attacker holding a key the issuer has dropped names its old kid and
// never causes an unknown-kid refetch, so only the schedule retires it.
// A failed read keeps the keys it has and tries again after
// refreshRetry.
//
// A verified token is remembered by its SHA-256 until it expires, with
// the RFC 7638 thumbprint of the key that verified it: a client sends the
// same token on every request, and the second check is a hash and two map
// lookups instead of an RSA verification. A remembered token whose key
// has left the JWKS is verified again (and so refused).
type Verifier struct {
	issuer, audience string
	jwksURI          string
	client           *http.Client
	limiter          *rate.Limiter
	fetchMu          sync.Mutex // one fetch at a time
	refreshing       atomic.Bool

	mu          sync.RWMutex
	keys        []verifyingKey
	known       map[string]bool // thumbprints of keys
	nextRefresh time.Time

	cacheMu sync.Mutex
	cache   map[[32]byte]cachedToken

	// now is the clock; tests replace it (never public API).
	now func() time.Time
	// log, when set (by this package, before the first Verify), hears of
	// keys dropped and of scheduled reads that failed.
	log *slog.Logger
}

// The bounds of the scheduled JWKS refresh: an issuer's max-age below
// RefreshMin would make every instance poll it, and one above RefreshMax
// (or none: RefreshDefault) would keep a dropped key trusted for longer
// than an operator expects after revoking it.
const (
	RefreshMin     = 5 * time.Minute
	RefreshMax     = time.Hour
	RefreshDefault = 15 * time.Minute
	refreshRetry   = time.Minute // after a failed scheduled read
)

// verifyingKey is a key of the JWKS and its RFC 7638 thumbprint.
type verifyingKey struct {
	jose.JSONWebKey
	thumb string
}

// cachedToken is a verified token and the thumbprint of its key.
type cachedToken struct {
	claims *Claims
	key    string
}

const (
	refetchEvery = 10 * time.Second
	refetchBurst = 3
	cacheMax     = 10000
	// MaxTokenBytes bounds a token before any parsing.
	MaxTokenBytes = 16 << 10
)

// Claims is what a verified token says.
type Claims struct {
	Issuer, Subject string
	Audience        []string
	Scopes          []string
	Expiry          time.Time
	// All holds every claim of the token (for Identity's chosen claims).
	All map[string]any
}

// NewVerifier fetches the JWKS once and returns a verifier for tokens of
// issuer whose aud names audience.
func NewVerifier(ctx context.Context, client *http.Client, issuer, audience, jwksURI string) (*Verifier, error) {
	if audience == "" {
		return nil, errors.New("identity: an audience is required")
	}
	v := &Verifier{
		issuer: issuer, audience: audience, jwksURI: jwksURI, client: client,
		limiter: rate.NewLimiter(rate.Every(refetchEvery), refetchBurst),
		cache:   map[[32]byte]cachedToken{},
		now:     time.Now,
	}
	if err := v.fetch(ctx); err != nil {
		return nil, fmt.Errorf("--oauth-issuer: the JWKS: %w", err)
	}
	return v, nil
}

// fetch reads the JWKS, replaces the keys, schedules the next read and
// forgets the tokens whose key is gone. The caller holds fetchMu (or is
// NewVerifier).
func (v *Verifier) fetch(ctx context.Context) error {
	var set jose.JSONWebKeySet
	h, err := getJSONHeader(ctx, v.client, v.jwksURI, &set)
	if err != nil {
		return err
	}
	var keys []verifyingKey
	known := map[string]bool{}
	for _, k := range set.Keys {
		if !k.IsPublic() || (k.Use != "" && k.Use != "sig") || !algAllowed(k.Algorithm, true) {
			continue
		}
		t, err := k.Thumbprint(crypto.SHA256)
		if err != nil {
			continue
		}
		keys = append(keys, verifyingKey{k, string(t)})
		known[string(t)] = true
	}
	v.mu.Lock()
	dropped := 0
	for t := range v.known {
		if !known[t] {
			dropped++
		}
	}
	v.keys, v.known = keys, known
	v.nextRefresh = v.now().Add(refreshAfter(h))
	v.mu.Unlock()
	if dropped > 0 && v.log != nil {
		v.log.Info("the issuer's JWKS no longer has some keys: their tokens are refused from now on", "issuer", v.issuer, "dropped", dropped, "keys", len(keys))
	}
	v.cacheMu.Lock()
	for sum, c := range v.cache {
		if !known[c.key] {
			delete(v.cache, sum)
		}
	}
	v.cacheMu.Unlock()
	return nil
}

// refreshAfter is how long a JWKS response stays fresh: its max-age less
// its Age, within [RefreshMin, RefreshMax]; RefreshMin for no-store,
// no-cache or a malformed max-age, RefreshDefault without a max-age.
// (Hand-written: github.com/lestrrat-go/httpcc, the parser at hand,
// panics on "max-age=", and an issuer must not be able to crash us. Only
// these three directives matter, and the result is clamped anyway.)
func refreshAfter(h http.Header) time.Duration {
	var secs uint64
	seen := false
	for _, v := range h.Values("Cache-Control") {
		for _, dir := range strings.Split(v, ",") {
			name, val, _ := strings.Cut(dir, "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store", "no-cache":
				return RefreshMin
			case "max-age":
				n, err := strconv.ParseUint(strings.Trim(strings.TrimSpace(val), `"`), 10, 64)
				if err != nil {
					return RefreshMin
				}
				secs, seen = n, true
			}
		}
	}
	if !seen {
		return RefreshDefault
	}
	if age, err := strconv.ParseUint(strings.TrimSpace(h.Get("Age")), 10, 64); err == nil {
		secs -= min(age, secs)
	}
	d := RefreshMax
	if secs < uint64(RefreshMax/time.Second) {
		d = time.Duration(secs) * time.Second
	}
	return max(d, RefreshMin)
}

func (v *Verifier) due(now time.Time) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return !now.Before(v.nextRefresh)
}

// refreshIfDue starts the scheduled read of the JWKS in the background
// when it is due and none is under way.
func (v *Verifier) refreshIfDue(now time.Time) {
	if !v.due(now) || !v.refreshing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer v.refreshing.Store(false)
		v.fetchMu.Lock()
		defer v.fetchMu.Unlock()
		if !v.due(v.now()) {
			return // an unknown-kid refetch has just read it
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := v.fetch(ctx); err != nil {
			v.mu.Lock()
			v.nextRefresh = v.now().Add(refreshRetry)
			v.mu.Unlock()
			if v.log != nil {
				v.log.Warn("the issuer's JWKS could not be read again; the keys read before stay trusted, and it is tried again in a minute", "issuer", v.issuer, "error", err.Error())
			}
		}
	}()
}

func algAllowed(alg string, emptyOK bool) bool {
	if alg == "" {
		return emptyOK
	}
	for _, a := range Algorithms {
		if string(a) == alg {
			return true
		}
	}
	return false
}

// lookup finds the keys a token's header can mean: by kid, or every key
// when the token names none.
func (v *Verifier) lookup(kid, alg string) []verifyingKey {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out []verifyingKey
	for _, k := range v.keys {
		if (kid == "" || k.KeyID == kid) && (k.Algorithm == "" || k.Algorithm == alg) {
			out = append(out, k)
		}
	}
	return out
}

// refetch reads the JWKS again if the rate limit allows; it reports
// whether it did.
func (v *Verifier) refetch(ctx context.Context) bool {
	v.fetchMu.Lock()
	defer v.fetchMu.Unlock()
	if !v.limiter.Allow() {
		return false
	}
	// Not the caller's context: a caller that hangs up would cancel the
	// fetch after taking the limiter's slot, and forged tokens from
	// callers that hang up at once could then keep a rotated-in key out.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return v.fetch(ctx) == nil
}

// Verify checks a token: size, an allowed alg, the issuer, a known key
// (refetching the JWKS once for an unknown kid), the signature, aud, exp
// (required), nbf and iat with Leeway, and a non-empty sub. Errors are
// *TokenError.
func (v *Verifier) Verify(ctx context.Context, raw string) (*Claims, error) {
	if len(raw) > MaxTokenBytes || raw == "" {
		return nil, refuse(ReasonMalformed)
	}
	now := v.now()
	v.refreshIfDue(now)
	sum := sha256.Sum256([]byte(raw))
	v.cacheMu.Lock()
	c, ok := v.cache[sum]
	v.cacheMu.Unlock()
	if ok {
		if now.Add(-Leeway).After(c.claims.Expiry) {
			v.cacheMu.Lock()
			delete(v.cache, sum)
			v.cacheMu.Unlock()
			return nil, refuse(ReasonExpired)
		}
		// Its key may have left the JWKS after the token was cached (a
		// verification that raced a refresh): verify it again then.
		v.mu.RLock()
		live := v.known[c.key]
		v.mu.RUnlock()
		if live {
			return c.claims, nil
		}
	}
	c, err := v.verify(ctx, raw, now)
	if err != nil {
		v.cacheMu.Lock()
		delete(v.cache, sum)
		v.cacheMu.Unlock()
		return nil, err
	}
	v.cacheMu.Lock()
	if len(v.cache) >= cacheMax {
		for k, old := range v.cache {
			if now.Add(-Leeway).After(old.claims.Expiry) || len(v.cache) >= cacheMax {
				delete(v.cache, k)
			}
		}
	}
	v.cache[sum] = c
	v.cacheMu.Unlock()
	return c.claims, nil
}

func (v *Verifier) verify(ctx context.Context, raw string, now time.Time) (cachedToken, error) {
	var none cachedToken
	tok, err := jwt.ParseSigned(raw, Algorithms)
	if err != nil {
		if strings.Contains(err.Error(), "unexpected signature algorithm") {
			return none, refuse(ReasonAlgorithm)
		}
		return none, refuse(ReasonMalformed)
	}
	if len(tok.Headers) != 1 {
		return none, refuse(ReasonMalformed)
	}
	h := tok.Headers[0]
	if !typeAllowed(h.ExtraHeaders[jose.HeaderType]) {
		return none, refuse(ReasonType)
	}
	// The issuer first, unverified: a foreign token must not cost a JWKS
	// refetch.
	var pre jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&pre); err != nil {
		return none, refuse(ReasonMalformed)
	}
	if pre.Issuer != v.issuer {
		return none, refuse(ReasonIssuer)
	}
	keys := v.lookup(h.KeyID, h.Algorithm)
	if len(keys) == 0 && v.refetch(ctx) {
		keys = v.lookup(h.KeyID, h.Algorithm)
	}
	if len(keys) == 0 {
		return none, refuse(ReasonKey)
	}
	var (
		std jwt.Claims
		all map[string]any
	)
	by := ""
	for _, k := range keys {
		if tok.Claims(k.Key, &std, &all) == nil {
			by = k.thumb
			break
		}
	}
	if by == "" {
		return none, refuse(ReasonSignature)
	}
	if std.Expiry == nil || std.Subject == "" {
		return none, refuse(ReasonClaims)
	}
	err = std.ValidateWithLeeway(jwt.Expected{Issuer: v.issuer, AnyAudience: jwt.Audience{v.audience}, Time: now}, Leeway)
	switch {
	case err == nil:
	case errors.Is(err, jwt.ErrInvalidAudience):
		return none, refuse(ReasonAudience)
	case errors.Is(err, jwt.ErrExpired):
		return none, refuse(ReasonExpired)
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return none, refuse(ReasonNotYet)
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return none, refuse(ReasonIssuer)
	default:
		return none, refuse(ReasonClaims)
	}
	return cachedToken{key: by, claims: &Claims{
		Issuer: std.Issuer, Subject: std.Subject, Audience: std.Audience,
		Scopes: scopesOf(all), Expiry: std.Expiry.Time(), All: all,
	}}, nil
}

// typeAllowed accepts a JWT's typ header when it is absent, "JWT" or
// RFC 9068's "at+jwt" (case-insensitive, with or without "application/"),
// and refuses any other: a token typed for something else (a logout
// token, a security event, a DPoP proof) is not a bearer token, whatever
// its claims (RFC 8725 section 3.11). Requiring at+jwt, as RFC 9068 asks,
// would refuse the access tokens of most issuers in use (Keycloak, Entra
// ID, Auth0 by default send "JWT"; others send none), and an ID token is
// typed "JWT" as well: what keeps ID tokens out is the audience, which
// must be this resource, not a client id.
func typeAllowed(typ any) bool {
	if typ == nil {
		return true
	}
	s, ok := typ.(string)
	if !ok {
		return false
	}
	if len(s) > len("application/") && strings.EqualFold(s[:len("application/")], "application/") {
		s = s[len("application/"):]
	}
	return strings.EqualFold(s, "jwt") || strings.EqualFold(s, "at+jwt")
}

// scopesOf reads "scope" (RFC 9068, space-separated) or "scp" (a list or
// a string, as some issuers send).
func scopesOf(all map[string]any) []string {
	switch s := all["scope"].(type) {
	case string:
		return strings.Fields(s)
	}
	switch s := all["scp"].(type) {
	case string:
		return strings.Fields(s)
	case []any:
		var out []string
		for _, x := range s {
			if str, ok := x.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}
