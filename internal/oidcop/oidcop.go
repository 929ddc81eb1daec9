package oidcop

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2/clientcredentials"
)

// The wrapper's test clients and users (see e2e/oidc-op/main.go).
const (
	AgentSecret   = "agent-secret-0123456789"
	ConnectClient = "mrtr-connect"
	ConnectSecret = "connect-secret-0123456789"
	AppClient     = "mcp-app"
	AppSecret     = "app-secret-0123456789"
	UserPassword  = "verysecure"
)

// OP is a running provider.
type OP struct {
	Issuer string
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// root is the repository root (this file is internal/oidcop/oidcop.go).
func root() string {
	_, f, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(f), "..", "..")
}

// Binary builds e2e/oidc-op once per process (MRTR_OIDC_OP, when set,
// names a binary already built) and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("MRTR_OIDC_OP"); b != "" {
		return b
	}
	buildOnce.Do(func() {
		dir := filepath.Join(root(), ".cache", "oidc-op")
		if buildErr = os.MkdirAll(dir, 0o755); buildErr != nil {
			return
		}
		binary = filepath.Join(dir, "oidc-op")
		cmd := exec.Command("go", "build", "-o", binary, ".")
		cmd.Dir = filepath.Join(root(), "e2e", "oidc-op")
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = &buildError{err: err, out: string(out)}
		}
	})
	if buildErr != nil {
		t.Fatalf("building the OpenID provider (e2e/oidc-op, from the Go module proxy): %v", buildErr)
	}
	return binary
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// Start runs a provider on a loopback port until the test ends.
func Start(t testing.TB) *OP {
	t.Helper()
	cmd := exec.Command(Binary(t))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if iss, ok := strings.CutPrefix(sc.Text(), "ISSUER "); ok {
				line <- iss
			}
		}
	}()
	select {
	case iss := <-line:
		return &OP{Issuer: iss}
	case <-time.After(time.Minute):
		t.Fatal("the OpenID provider did not start")
	}
	return nil
}

// Token gets an access token for an agent (agent-alice, agent-bob) by
// client credentials, for resource (RFC 8707; "" asks for none) with the
// scopes.
func (op *OP) Token(t testing.TB, agent, resource string, scopes ...string) string {
	t.Helper()
	cc := clientcredentials.Config{
		ClientID: agent, ClientSecret: AgentSecret, TokenURL: op.Issuer + "oauth/token", Scopes: scopes,
	}
	if resource != "" {
		cc.EndpointParams = url.Values{"resource": {resource}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tok, err := cc.Token(ctx)
	if err != nil {
		t.Fatalf("client credentials for %s: %v", agent, err)
	}
	return tok.AccessToken
}

// Rotate makes the provider sign with a new key from now on, published in
// its JWKS or not.
func (op *OP) Rotate(t testing.TB, publish bool) {
	t.Helper()
	p := "1"
	if !publish {
		p = "0"
	}
	res, err := http.Post(op.Issuer+"test/rotate?publish="+p, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("rotate: %s", res.Status)
	}
}
