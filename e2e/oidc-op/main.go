// Command oidc-op runs the example OpenID provider of
// github.com/zitadel/oidc/v3 (its exampleop package: login page, test
// users, in-memory storage) on a loopback port, for mrtr-wasm's tests.
// It is never part of mrtr-wasm itself. It adds what the tests need and
// the example lacks, around the example's own storage (the provider still
// signs every token):
//   - JWT access tokens (the example's clients issue opaque ones);
//   - RFC 8707 resource indicators: a "resource" parameter is added to the
//     token's audience;
//   - two service clients for client credentials, agent-alice and
//     agent-bob (their tokens' subject is the client id);
//   - redirect URIs on any loopback port;
//   - the granted scopes in the access token's "scope" claim;
//   - POST /test/rotate?publish=1|0: sign from now on with a new RSA key,
//     published in the JWKS (1) or not (0, an unknown kid).
//
// It prints "ISSUER <url>" on stdout once it listens.
package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Secrets of the test clients (test fixtures, not secrets).
const (
	agentSecret   = "agent-secret-0123456789"
	connectSecret = "connect-secret-0123456789"
	appSecret     = "app-secret-0123456789"
)

type resourceKey struct{}

type key struct {
	id      string
	priv    *rsa.PrivateKey
	publish bool
}

func (k *key) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *key) Key() any                                    { return k.priv }
func (k *key) ID() string                                  { return k.id }

type pubKey struct{ k *key }

func (p pubKey) ID() string                         { return p.k.id }
func (p pubKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (p pubKey) Use() string                        { return "sig" }
func (p pubKey) Key() any                           { return &p.k.priv.PublicKey }

// store is the example's storage with the additions above.
type store struct {
	*storage.Storage
	mu        sync.Mutex
	keys      []*key
	resources map[string]string // auth request id → resource
}

func newKey(publish bool) *key {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return &key{id: uuid.NewString(), priv: priv, publish: publish}
}

func (s *store) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[len(s.keys)-1], nil
}

func (s *store) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *store) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ks []op.Key
	for _, k := range s.keys {
		if k.publish {
			ks = append(ks, pubKey{k})
		}
	}
	return ks, nil
}

// client issues JWT access tokens, allows the tests' scopes and any
// loopback redirect URI.
type client struct{ *storage.Client }

func (client) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (c client) IsScopeAllowed(s string) bool {
	return strings.HasPrefix(s, "crm:") || s == "mcp" || c.Client.IsScopeAllowed(s)
}
func (client) RedirectURIGlobs() []string {
	return []string{"http://127.0.0.1:*/**", "http://localhost:*/**"}
}
func (client) PostLogoutRedirectURIGlobs() []string { return nil }
func (c client) GrantTypes() []oidc.GrantType {
	return append(c.Client.GrantTypes(), oidc.GrantTypeClientCredentials)
}

func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	if _, err := s.Storage.GetClientByClientID(ctx, id); err != nil {
		return nil, err
	}
	c, ok := clients[id]
	if !ok {
		return nil, fmt.Errorf("client not found")
	}
	return client{c}, nil
}

// clients are the registered browser clients; agents the service clients.
var clients, agents = map[string]*storage.Client{}, map[string]*storage.Client{}

func (s *store) ClientCredentials(ctx context.Context, id, secret string) (op.Client, error) {
	c, ok := agents[id]
	if !ok || secret != agentSecret {
		return nil, fmt.Errorf("wrong service user or password")
	}
	return client{c}, nil
}

func (s *store) ClientCredentialsTokenRequest(ctx context.Context, id string, scopes []string) (op.TokenRequest, error) {
	if _, ok := agents[id]; !ok {
		return nil, fmt.Errorf("wrong service user or password")
	}
	return &oidc.JWTTokenRequest{Subject: id, Audience: audience(id, resourceOf(ctx)), Scopes: scopes}, nil
}

// GetPrivateClaimsFromScopes adds the granted scopes as the "scope" claim
// (RFC 9068), which the example leaves out of JWT access tokens.
func (s *store) GetPrivateClaimsFromScopes(ctx context.Context, userID, clientID string, scopes []string) (map[string]any, error) {
	claims, err := s.Storage.GetPrivateClaimsFromScopes(ctx, userID, clientID, scopes)
	if err != nil {
		return nil, err
	}
	if len(scopes) > 0 {
		if claims == nil {
			claims = map[string]any{}
		}
		claims["scope"] = strings.Join(scopes, " ")
	}
	return claims, nil
}

func (s *store) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, userID string) (op.AuthRequest, error) {
	ar, err := s.Storage.CreateAuthRequest(ctx, req, userID)
	if err != nil {
		return nil, err
	}
	if r := resourceOf(ctx); r != "" {
		s.mu.Lock()
		s.resources[ar.GetID()] = r
		s.mu.Unlock()
	}
	return s.wrap(ar), nil
}

func (s *store) AuthRequestByID(ctx context.Context, id string) (op.AuthRequest, error) {
	ar, err := s.Storage.AuthRequestByID(ctx, id)
	return s.wrap(ar), err
}

func (s *store) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	ar, err := s.Storage.AuthRequestByCode(ctx, code)
	return s.wrap(ar), err
}

type authRequest struct {
	op.AuthRequest
	aud []string
}

func (a authRequest) GetAudience() []string { return a.aud }

func (s *store) wrap(ar op.AuthRequest) op.AuthRequest {
	if ar == nil {
		return nil
	}
	s.mu.Lock()
	r := s.resources[ar.GetID()]
	s.mu.Unlock()
	return authRequest{ar, audience(ar.GetClientID(), r)}
}

func audience(clientID, resource string) []string {
	if resource == "" {
		return []string{clientID}
	}
	return []string{clientID, resource}
}

func resourceOf(ctx context.Context) string {
	r, _ := ctx.Value(resourceKey{}).(string)
	return r
}

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	issuer := "http://" + ln.Addr().String() + "/"
	clients["mrtr-connect"] = storage.WebClient("mrtr-connect", connectSecret)
	clients["mcp-app"] = storage.WebClient("mcp-app", appSecret)
	storage.RegisterClients(clients["mrtr-connect"], clients["mcp-app"])
	for _, id := range []string{"agent-alice", "agent-bob"} {
		agents[id] = storage.WebClient(id, agentSecret)
	}
	s := &store{Storage: storage.NewStorage(storage.NewUserStore(issuer)), keys: []*key{newKey(true)}, resources: map[string]string{}}
	router := exampleop.SetupServer(issuer, s, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), false)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /test/rotate", func(w http.ResponseWriter, r *http.Request) {
		k := newKey(r.URL.Query().Get("publish") != "0")
		s.mu.Lock()
		s.keys = append(s.keys, k)
		s.mu.Unlock()
		fmt.Fprintln(w, k.id)
	})
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err == nil {
			if res := r.Form.Get("resource"); res != "" {
				r = r.WithContext(context.WithValue(r.Context(), resourceKey{}, res))
			}
		}
		router.ServeHTTP(w, r)
	}))
	fmt.Println("ISSUER " + issuer)
	if err := http.Serve(ln, mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
