package identity

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"
)

// Flags are the identity flags that serve and proxy share.
type Flags struct {
	TokensFile       string
	Issuer           string
	Audience         string
	Scopes           string
	ClientID         string
	ClientSecretFile string
	PolicyClaims     string
}

// DefaultPolicyClaims are the claims the policy sees by default.
const DefaultPolicyClaims = "client_id,azp,email,email_verified,groups,roles"

// Register adds the flags to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.TokensFile, "auth-tokens", "", "JSON file mapping bearer tokens to principal names, for try-outs (not with --oauth-issuer); with neither, every caller is \"anonymous\"")
	fs.StringVar(&f.Issuer, "oauth-issuer", "", "OAuth 2.1 authorization server (issuer URL; https, or http on loopback): accept its JWT access tokens, serve RFC 9728 metadata")
	fs.StringVar(&f.Audience, "oauth-audience", "", "the aud every access token must carry (default: the public URL of /mcp)")
	fs.StringVar(&f.Scopes, "oauth-scopes", "", "scopes every request needs, separated by spaces or commas")
	fs.StringVar(&f.ClientID, "oauth-client-id", "", "OpenID Connect client id of the /connect page's sign-in (authorization code + PKCE)")
	fs.StringVar(&f.ClientSecretFile, "oauth-client-secret-file", "", "file holding that client's secret (none: a public client)")
	fs.StringVar(&f.PolicyClaims, "oauth-policy-claims", DefaultPolicyClaims, "claims of the access token the policy sees as input.claims, separated by commas")
}

func split(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
}

// Validate checks the flags together: --auth-tokens and OAuth do not
// combine, and the other --oauth-* flags need --oauth-issuer.
func (f *Flags) Validate() error {
	if f.TokensFile != "" && f.Issuer != "" {
		return errors.New("--auth-tokens and --oauth-issuer cannot be combined: tokens are for try-outs, OAuth for deployments")
	}
	if f.Issuer == "" {
		for name, v := range map[string]string{"--oauth-audience": f.Audience, "--oauth-scopes": f.Scopes, "--oauth-client-id": f.ClientID, "--oauth-client-secret-file": f.ClientSecretFile} {
			if v != "" {
				return fmt.Errorf("%s needs --oauth-issuer", name)
			}
		}
		return nil
	}
	if _, err := CheckURL("--oauth-issuer", f.Issuer); err != nil {
		return err
	}
	if f.ClientSecretFile != "" && f.ClientID == "" {
		return errors.New("--oauth-client-secret-file needs --oauth-client-id")
	}
	return nil
}

// Options are what Build needs beyond the flags.
type Options struct {
	// PublicURL is where clients and browsers reach the server.
	PublicURL string
	// ResourcePath is the protected resource's path (default /mcp).
	ResourcePath string
	// LoginCallback and CookiePath are the sign-in's redirect path
	// (default /connect/callback) and the path its session cookie is sent
	// to (default /connect/).
	LoginCallback, CookiePath string
	Logger                    *slog.Logger
	HTTPClient                *http.Client
}

// Build makes the Authenticator the flags describe, or nil when there is
// no authentication. With --oauth-issuer it discovers the issuer and
// fetches its keys, so a wrong issuer fails the start.
func (f *Flags) Build(ctx context.Context, o Options) (*Authenticator, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if o.ResourcePath == "" {
		o.ResourcePath = "/mcp"
	}
	if o.LoginCallback == "" {
		o.LoginCallback = "/connect/callback"
	}
	if o.CookiePath == "" {
		o.CookiePath = "/connect/"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	a := &Authenticator{log: o.Logger, sdk: sdkBridge}
	switch {
	case f.TokensFile != "":
		t, err := LoadTokens(f.TokensFile)
		if err != nil {
			return nil, err
		}
		a.tokens = t
		return a, nil
	case f.Issuer == "":
		return nil, nil
	}
	pub, err := CheckURL("--public-url", o.PublicURL)
	if err != nil {
		return nil, fmt.Errorf("with --oauth-issuer: %w", err)
	}
	base := strings.TrimRight(pub.String(), "/")
	a.resource = base + o.ResourcePath
	a.metadataURL = base + MetadataPath(o.ResourcePath)
	a.scopes = split(f.Scopes)
	a.policyClaims = split(f.PolicyClaims)
	if f.PolicyClaims == "" {
		a.policyClaims = split(DefaultPolicyClaims)
	}
	audience := f.Audience
	if audience == "" {
		audience = a.resource
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	a.provider, err = Discover(dctx, o.HTTPClient, f.Issuer)
	if err != nil {
		return nil, err
	}
	if a.verifier, err = NewVerifier(dctx, o.HTTPClient, a.provider.Issuer, audience, a.provider.JWKSURI); err != nil {
		return nil, err
	}
	a.verifier.log = o.Logger
	if f.ClientID != "" {
		var secret string
		if f.ClientSecretFile != "" {
			b, err := os.ReadFile(f.ClientSecretFile)
			if err != nil {
				return nil, fmt.Errorf("--oauth-client-secret-file: %w", err)
			}
			secret = strings.TrimSpace(string(b))
		}
		if a.login, err = newLogin(dctx, o, a.provider, f.ClientID, secret); err != nil {
			return nil, err
		}
	}
	return a, nil
}
