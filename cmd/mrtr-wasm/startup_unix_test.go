//go:build unix

package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

// How the CLI starts: secret files, usage errors, and the stdio modes
// that serve no MCP over HTTP. Each failed on the code before its fix.

// proxy refuses secret files others may read, as serve does; it used to
// start with a world-readable --keys.
func TestProxyRefusesOpenSecretFiles(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	if err := os.WriteFile(keys, []byte(host.GenerateKey()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	started := false
	code := proxyMain(context.Background(), []string{"--addr", "127.0.0.1:0", "--keys", keys, "--engine", "native", "--upstream", "http://127.0.0.1:1/mcp"},
		strings.NewReader(""), &stdout, &stderr, func(string) { started = true })
	if code != exitUsage || started || !strings.Contains(stderr.String(), "too open") {
		t.Fatalf("exit %d, started %v: %s", code, started, stderr.String())
	}
}

// Bad keys and identity flags are input errors (exit 2) in serve and
// proxy alike; they exited 1 in proxy, and bad key content in both.
func TestKeyAndIdentityErrorsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	badKeys := filepath.Join(dir, "keys")
	if err := os.WriteFile(badKeys, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up := []string{"--engine", "native", "--addr", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1/mcp"}
	for _, c := range []struct {
		env  string
		args []string
	}{
		{"", append([]string{"proxy", "--keys", badKeys}, up...)},
		{"", append([]string{"proxy", "--keys", filepath.Join(dir, "missing")}, up...)},
		{"garbage", append([]string{"proxy"}, up...)},
		{"", append([]string{"proxy", "--oauth-scopes", "x"}, up...)},
		{"", append([]string{"proxy", "--auth-tokens", filepath.Join(dir, "missing.json")}, up...)},
		{"", []string{"serve", "--keys", badKeys, "--engine", "native", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "d1")}},
		{"garbage", []string{"serve", "--engine", "native", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "d2")}},
	} {
		t.Setenv("MRTR_KEYS", c.env)
		if c.env == "" {
			os.Unsetenv("MRTR_KEYS")
		}
		code, _, stderr := runCLI(t, c.args...)
		if code != exitUsage {
			t.Errorf("MRTR_KEYS=%q %v: exit %d, want 2: %s", c.env, c.args, code, stderr)
		}
		if strings.Contains(stderr, "garbage") {
			t.Errorf("%v: the error shows MRTR_KEYS: %s", c.args, stderr)
		}
	}
}

// In --stdio mode the listener serves no /mcp: its one MCP client is the
// local user on stdio, and any local process could otherwise act as that
// user. It used to serve /mcp without authentication, and serve --stdio
// panicked when it could not listen at all.
func TestStdioModesServeNoMCPOverHTTP(t *testing.T) {
	bin := hostileChild(t)
	dir := t.TempDir()
	for _, name := range []string{"serve", "proxy"} {
		t.Run(name, func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			ctx, cancel := context.WithCancel(context.Background())
			addr := make(chan string, 1)
			done := make(chan int, 1)
			var stdout, stderr bytes.Buffer
			go func() {
				ready := func(a string) { addr <- a }
				if name == "serve" {
					done <- serve(ctx, []string{"--stdio", "--addr", "127.0.0.1:0", "--engine", "native", "--data", filepath.Join(dir, name)}, pr, &stdout, &stderr, ready)
				} else {
					done <- proxyMain(ctx, []string{"--stdio", "--addr", "127.0.0.1:0", "--engine", "native", "--", bin}, pr, &stdout, &stderr, ready)
				}
			}()
			var a string
			select {
			case a = <-addr:
			case code := <-done:
				t.Fatalf("exited %d: %s", code, stderr.String())
			case <-time.After(30 * time.Second):
				t.Fatal("no listener")
			}
			resp, err := http.Post("http://"+a+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("POST /mcp on the --stdio listener: HTTP %d, want 404", resp.StatusCode)
			}
			if resp, err := http.Get("http://" + a + "/metrics"); err != nil || resp.StatusCode != 200 {
				t.Errorf("/metrics: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}
			// SIGTERM (ctx) with the client's pipe open and nothing sent yet.
			cancel()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("did not stop on SIGTERM while stdin was open and silent")
			}
		})
	}

	// serve --stdio goes on without a listener when it cannot have one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var stdout, stderr bytes.Buffer
	code := serve(context.Background(), []string{"--stdio", "--addr", ln.Addr().String(), "--engine", "native", "--data", filepath.Join(dir, "taken")},
		strings.NewReader(""), &stdout, &stderr, nil)
	if code != exitOK || !strings.Contains(stderr.String(), "no HTTP listener") {
		t.Fatalf("serve --stdio with its port taken: exit %d: %s", code, stderr.String())
	}
}
