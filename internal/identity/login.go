package identity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// Login is the OpenID Connect client of the server's own pages: the
// authorization code flow with PKCE (S256), state and nonce, as the
// client --oauth-client-id names. It keeps what a sign-in needs in memory
// (so a sign-in must finish on the instance that started it) and gives
// the browser only random handles, in cookies that are HttpOnly,
// SameSite=Lax, Secure unless the server's public URL is loopback, and
// short-lived.
type Login struct {
	cfg        oauth2.Config
	idTokens   *Verifier // aud = the client id
	clientID   string
	secure     bool
	cookiePath string // where the session cookie is sent
	callback   string // the callback's path

	mu       sync.Mutex
	pending  map[string]*pendingLogin // by state
	sessions map[[32]byte]*session    // by SHA-256 of the cookie
}

type pendingLogin struct {
	binding  [32]byte // SHA-256 of the login cookie
	verifier string   // PKCE
	nonce    string
	returnTo string
	expires  time.Time
}

type session struct {
	id      *Identity
	expires time.Time
}

const (
	loginCookie   = "mrtr_login"
	sessionCookie = "mrtr_session"
	loginTTL      = 10 * time.Minute
	sessionTTL    = 10 * time.Minute
	maxPending    = 10000
	// maxPendingPerPage is how many sign-ins may wait for one page
	// (returnTo): a few tabs' worth.
	maxPendingPerPage = 8
)

// ErrLogin is a sign-in that failed (a stale or forged callback, a
// refused code, a bad ID token). Its text is safe to show.
var ErrLogin = errors.New("the sign-in could not be completed")

func random() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (l *Login) cookie(name, value, path string, ttl time.Duration) *http.Cookie {
	return &http.Cookie{
		Name: name, Value: value, Path: path, MaxAge: int(ttl / time.Second),
		HttpOnly: true, Secure: l.secure, SameSite: http.SameSiteLaxMode,
	}
}

// CallbackPath is the path of the redirect URI (to be routed to Finish).
func (l *Login) CallbackPath() string { return l.callback }

// Start sends the browser to the issuer's sign-in, to come back to
// returnTo (a path of this server) once Finish has run.
func (l *Login) Start(w http.ResponseWriter, r *http.Request, returnTo string) {
	if !strings.HasPrefix(returnTo, "/") || strings.HasPrefix(returnTo, "//") {
		returnTo = "/"
	}
	state, nonce, bind, verifier := random(), random(), random(), oauth2.GenerateVerifier()
	now := time.Now()
	l.mu.Lock()
	// Room is made at the expense of the same page's sign-ins first: any
	// user may open a /connect link of theirs again and again, and must
	// not push other users' sign-ins out.
	var sameKey, oldKey string
	var same, old *pendingLogin
	sameCount := 0
	for k, p := range l.pending {
		if now.After(p.expires) {
			delete(l.pending, k)
			continue
		}
		if p.returnTo == returnTo {
			sameCount++
			if same == nil || p.expires.Before(same.expires) {
				sameKey, same = k, p
			}
		}
		if old == nil || p.expires.Before(old.expires) {
			oldKey, old = k, p
		}
	}
	switch {
	case sameCount >= maxPendingPerPage:
		delete(l.pending, sameKey)
	case len(l.pending) >= maxPending:
		delete(l.pending, oldKey)
	}
	l.pending[state] = &pendingLogin{binding: sha256.Sum256([]byte(bind)), verifier: verifier, nonce: nonce, returnTo: returnTo, expires: now.Add(loginTTL)}
	l.mu.Unlock()
	http.SetCookie(w, l.cookie(loginCookie, bind, l.callback, loginTTL))
	u := l.cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("nonce", nonce))
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// Finish handles the redirect back from the issuer: the state must be
// one this server issued to this very browser (the login cookie), unused
// and fresh; the code is exchanged with the PKCE verifier; the ID token
// must verify (issuer, aud = the client id, exp) and carry the nonce.
// Then the browser gets a session cookie and Finish returns where to go.
func (l *Login) Finish(w http.ResponseWriter, r *http.Request) (returnTo string, err error) {
	q := r.URL.Query()
	state := q.Get("state")
	l.mu.Lock()
	p := l.pending[state]
	delete(l.pending, state) // single use, whatever happens next
	l.mu.Unlock()
	http.SetCookie(w, l.cookie(loginCookie, "", l.callback, -time.Second))
	c, cerr := r.Cookie(loginCookie)
	if p == nil || cerr != nil || time.Now().After(p.expires) {
		return "", ErrLogin
	}
	if sum := sha256.Sum256([]byte(c.Value)); subtle.ConstantTimeCompare(sum[:], p.binding[:]) != 1 {
		return "", ErrLogin
	}
	if q.Get("error") != "" || q.Get("code") == "" {
		return "", ErrLogin
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	tok, err := l.cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(p.verifier))
	if err != nil {
		return "", ErrLogin
	}
	raw, _ := tok.Extra("id_token").(string)
	claims, err := l.idTokens.Verify(ctx, raw)
	if err != nil {
		return "", ErrLogin
	}
	if n, _ := claims.All["nonce"].(string); subtle.ConstantTimeCompare([]byte(n), []byte(p.nonce)) != 1 {
		return "", ErrLogin
	}
	if azp, ok := claims.All["azp"].(string); ok && azp != l.clientID {
		return "", ErrLogin
	}
	value := random()
	l.mu.Lock()
	now := time.Now()
	for k, s := range l.sessions {
		if now.After(s.expires) || len(l.sessions) >= maxPending {
			delete(l.sessions, k)
		}
	}
	l.sessions[sha256.Sum256([]byte(value))] = &session{id: &Identity{Principal: Principal(claims.Issuer, claims.Subject), Expiry: now.Add(sessionTTL)}, expires: now.Add(sessionTTL)}
	l.mu.Unlock()
	http.SetCookie(w, l.cookie(sessionCookie, value, l.cookiePath, sessionTTL))
	return p.returnTo, nil
}

// SignedIn returns who signed in in this browser (through Finish), or
// nil.
func (l *Login) SignedIn(r *http.Request) *Identity {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	k := sha256.Sum256([]byte(c.Value))
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.sessions[k]
	if s == nil {
		return nil
	}
	if time.Now().After(s.expires) {
		delete(l.sessions, k)
		return nil
	}
	return s.id
}

// SignOut ends the browser's session (after it has done what it came
// for).
func (l *Login) SignOut(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		l.mu.Lock()
		delete(l.sessions, sha256.Sum256([]byte(c.Value)))
		l.mu.Unlock()
	}
	http.SetCookie(w, l.cookie(sessionCookie, "", l.cookiePath, -time.Second))
}

func newLogin(ctx context.Context, o Options, md *ProviderMetadata, clientID, secret string) (*Login, error) {
	if md.AuthorizationEndpoint == "" || md.TokenEndpoint == "" {
		return nil, errors.New("--oauth-client-id: the issuer's metadata has no authorization or token endpoint")
	}
	pub, err := url.Parse(o.PublicURL)
	if err != nil {
		return nil, err
	}
	idv, err := NewVerifier(ctx, o.HTTPClient, md.Issuer, clientID, md.JWKSURI)
	if err != nil {
		return nil, err
	}
	idv.log = o.Logger
	return &Login{
		cfg: oauth2.Config{
			ClientID: clientID, ClientSecret: secret,
			Endpoint:    oauth2.Endpoint{AuthURL: md.AuthorizationEndpoint, TokenURL: md.TokenEndpoint},
			RedirectURL: strings.TrimRight(o.PublicURL, "/") + o.LoginCallback,
			Scopes:      []string{"openid"},
		},
		idTokens: idv, clientID: clientID,
		secure:     !(pub.Scheme == "http" && IsLoopback(pub.Hostname())),
		cookiePath: o.CookiePath, callback: o.LoginCallback,
		pending: map[string]*pendingLogin{}, sessions: map[[32]byte]*session{},
	}, nil
}
