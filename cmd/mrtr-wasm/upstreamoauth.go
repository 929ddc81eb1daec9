package main

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"net/url"
	"os"
	"strings"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// upstreamOAuth is how the proxy authenticates to an HTTP upstream that
// wants an OAuth access token of its own (the proxy as a confidential
// client, RFC 6749 client credentials), rather than a static
// --upstream-header: the token is fetched when first needed and again
// when it expires, for the upstream's URL as the resource (RFC 8707, as
// MCP's authorization asks).
type upstreamOAuth struct {
	tokenURL, clientID, secretFile, scopes string
}

func (u *upstreamOAuth) flags(fs *flag.FlagSet) {
	fs.StringVar(&u.tokenURL, "upstream-oauth-token-url", "", "OAuth token endpoint: the proxy gets its own access token for the HTTP upstream by client credentials")
	fs.StringVar(&u.clientID, "upstream-oauth-client-id", "", "the proxy's client id at --upstream-oauth-token-url")
	fs.StringVar(&u.secretFile, "upstream-oauth-client-secret-file", "", "file holding the proxy's client secret (mode 0600; never logged)")
	fs.StringVar(&u.scopes, "upstream-oauth-scopes", "", "scopes asked for the upstream's token, space-separated")
}

// tokenSource is nil without --upstream-oauth-token-url.
func (u *upstreamOAuth) tokenSource(ctx context.Context, resource string, static http.Header) (oauth2.TokenSource, error) {
	if u.tokenURL == "" {
		if u.clientID != "" || u.secretFile != "" || u.scopes != "" {
			return nil, errors.New("--upstream-oauth-* needs --upstream-oauth-token-url")
		}
		return nil, nil
	}
	if t, err := url.Parse(u.tokenURL); err != nil || (t.Scheme != "https" && t.Scheme != "http") || t.Host == "" {
		return nil, errors.New("--upstream-oauth-token-url must be an http(s) URL")
	}
	if u.clientID == "" || u.secretFile == "" {
		return nil, errors.New("--upstream-oauth-token-url needs --upstream-oauth-client-id and --upstream-oauth-client-secret-file")
	}
	if static.Get("Authorization") != "" {
		return nil, errors.New("give either --upstream-oauth-token-url or an --upstream-header Authorization, not both")
	}
	if err := checkPrivateFile("--upstream-oauth-client-secret-file", u.secretFile); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(u.secretFile)
	if err != nil {
		return nil, errors.New("--upstream-oauth-client-secret-file: cannot read it")
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return nil, errors.New("--upstream-oauth-client-secret-file is empty")
	}
	cc := clientcredentials.Config{ClientID: u.clientID, ClientSecret: secret, TokenURL: u.tokenURL,
		Scopes: strings.Fields(u.scopes), EndpointParams: url.Values{"resource": {resource}}}
	// The token outlives the call that fetched it: not ctx of one request.
	return cc.TokenSource(context.WithoutCancel(ctx)), nil
}
