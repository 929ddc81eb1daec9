package identity

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Anonymous is every caller's principal when no authentication is set.
const Anonymous = "anonymous"

// RequestPrincipal is the authenticated principal of r, or Anonymous.
func RequestPrincipal(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && ti.UserID != "" {
		return ti.UserID
	}
	return Anonymous
}

// Principal is the principal of subject sub at issuer iss: iss + "#" +
// sub (see the package documentation).
func Principal(iss, sub string) string { return iss + "#" + sub }

// Identity is who an authenticated request comes from.
type Identity struct {
	Principal string
	// Scopes are the access token's scopes (none under --auth-tokens).
	Scopes []string
	// Claims are the token's claims that the policy may see
	// (--oauth-policy-claims); none under --auth-tokens.
	Claims map[string]any
	// Expiry is when the token expires (zero under --auth-tokens).
	Expiry time.Time
}

type identityKey struct{}

// FromContext returns the request's Identity, or nil.
func FromContext(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}

// tokenInfoExtra is the key of the Identity in auth.TokenInfo.Extra.
const tokenInfoExtra = "mrtr-wasm/identity"

// FromTokenInfo returns the Identity the Middleware put into the SDK's
// TokenInfo (what a tool handler sees as req.Extra.TokenInfo), or nil.
func FromTokenInfo(ti *auth.TokenInfo) *Identity {
	if ti == nil {
		return nil
	}
	id, _ := ti.Extra[tokenInfoExtra].(*Identity)
	return id
}

// Authenticator checks the bearer token of every request it guards: a
// JWT of the configured issuer, or an --auth-tokens token.
type Authenticator struct {
	tokens   *Tokens
	verifier *Verifier
	provider *ProviderMetadata
	login    *Login
	log      *slog.Logger

	scopes       []string // required on every request
	policyClaims []string
	resource     string // the protected resource's URL (/mcp)
	metadataURL  string // where its RFC 9728 metadata is
	// sdk copies the Identity into the SDK's TokenInfo context.
	sdk func(http.Handler) http.Handler
}

// OAuth reports whether the Authenticator checks OAuth access tokens.
func (a *Authenticator) OAuth() bool { return a != nil && a.verifier != nil }

// Tokens returns the --auth-tokens table, or nil.
func (a *Authenticator) Tokens() *Tokens {
	if a == nil {
		return nil
	}
	return a.tokens
}

// Login returns the OpenID Connect client for pages, or nil when
// --oauth-client-id is not set.
func (a *Authenticator) Login() *Login {
	if a == nil {
		return nil
	}
	return a.login
}

// Verifier returns the JWT verifier, or nil under --auth-tokens.
func (a *Authenticator) Verifier() *Verifier {
	if a == nil {
		return nil
	}
	return a.verifier
}

// Authenticate checks one bearer token (without the "Bearer " prefix)
// and the required scopes. Errors are *TokenError.
func (a *Authenticator) Authenticate(ctx context.Context, token string) (*Identity, error) {
	if token == "" {
		return nil, refuse(ReasonMissing)
	}
	if a.tokens != nil {
		p, ok := a.tokens.Principal(token)
		if !ok {
			return nil, refuse(ReasonUnknown)
		}
		return &Identity{Principal: p}, nil
	}
	c, err := a.verifier.Verify(ctx, token)
	if err != nil {
		return nil, err
	}
	for _, s := range a.scopes {
		if !slices.Contains(c.Scopes, s) {
			return nil, refuse(ReasonScope)
		}
	}
	id := &Identity{Principal: Principal(c.Issuer, c.Subject), Scopes: c.Scopes, Expiry: c.Expiry, Claims: map[string]any{}}
	for _, name := range a.policyClaims {
		if v, ok := c.All[name]; ok {
			id.Claims[name] = v
		}
	}
	return id, nil
}

// Bearer returns the token of a request's "Authorization: Bearer"
// header, or "". (A proxy with --upstream-pass-token forwards it; nothing
// else may.)
func Bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// Middleware refuses a request without a good token (401, or 403 for
// missing scopes, with the WWW-Authenticate challenge of RFC 6750 and RFC
// 9728) and passes the others on with their Identity in the context. It
// logs the refusal's reason, never the token.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	inner := a.sdk(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := a.Authenticate(r.Context(), Bearer(r))
		if err != nil {
			reason := ReasonMalformed
			var te *TokenError
			if errors.As(err, &te) {
				reason = te.Reason
			}
			a.log.LogAttrs(r.Context(), slog.LevelWarn, "request refused", slog.String("auth", reason), slog.String("path", r.URL.Path))
			a.challenge(w, reason)
			return
		}
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
	})
}

// Challenge returns the WWW-Authenticate value for a refusal reason.
func (a *Authenticator) Challenge(reason string) string {
	var params []string
	if a.metadataURL != "" {
		params = append(params, `resource_metadata="`+a.metadataURL+`"`)
	}
	switch reason {
	case ReasonMissing:
	case ReasonScope:
		params = append(params, `error="insufficient_scope"`)
	default:
		params = append(params, `error="invalid_token"`)
	}
	if len(a.scopes) > 0 {
		params = append(params, `scope="`+strings.Join(a.scopes, " ")+`"`)
	}
	if len(params) == 0 {
		return "Bearer"
	}
	return "Bearer " + strings.Join(params, ", ")
}

func (a *Authenticator) challenge(w http.ResponseWriter, reason string) {
	status, code := http.StatusUnauthorized, "invalid_token"
	switch reason {
	case ReasonScope:
		status, code = http.StatusForbidden, "insufficient_scope"
	case ReasonMissing:
		code = "unauthorized"
	}
	w.Header().Set("WWW-Authenticate", a.Challenge(reason))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": "bearer token refused: " + reason})
}

// Metadata is the RFC 9728 protected resource metadata, or nil under
// --auth-tokens (there is no authorization server to name).
func (a *Authenticator) Metadata() *oauthex.ProtectedResourceMetadata {
	if !a.OAuth() {
		return nil
	}
	return &oauthex.ProtectedResourceMetadata{
		Resource:               a.resource,
		AuthorizationServers:   []string{a.provider.Issuer},
		ScopesSupported:        a.scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "mrtr-wasm",
	}
}

// MetadataPath is the path-suffixed well-known location of the metadata
// of the resource at resourcePath (RFC 9728 §3.1).
func MetadataPath(resourcePath string) string {
	return "/.well-known/oauth-protected-resource" + strings.TrimSuffix(resourcePath, "/")
}

// RegisterMetadata serves the metadata at /.well-known/oauth-protected-resource
// and at its path-suffixed form for resourcePath (nothing under
// --auth-tokens).
func (a *Authenticator) RegisterMetadata(mux *http.ServeMux, resourcePath string) {
	m := a.Metadata()
	if m == nil {
		return
	}
	h := auth.ProtectedResourceMetadataHandler(m)
	mux.Handle("/.well-known/oauth-protected-resource", h)
	if p := MetadataPath(resourcePath); p != "/.well-known/oauth-protected-resource" {
		mux.Handle(p, h)
	}
}

// TokenInfo is the Identity as the MCP SDK carries it.
func (id *Identity) TokenInfo() *auth.TokenInfo {
	return &auth.TokenInfo{UserID: id.Principal, Scopes: id.Scopes, Expiration: id.Expiry, Extra: map[string]any{tokenInfoExtra: id}}
}

func sdkBridge(next http.Handler) http.Handler {
	return auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		id := FromContext(ctx)
		if id == nil {
			return nil, auth.ErrInvalidToken
		}
		return id.TokenInfo(), nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true, ClockSkew: Leeway})(next)
}

// NewTokenAuthenticator checks bearer tokens against t (--auth-tokens).
func NewTokenAuthenticator(t *Tokens, log *slog.Logger) *Authenticator {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Authenticator{tokens: t, log: log, sdk: sdkBridge}
}
