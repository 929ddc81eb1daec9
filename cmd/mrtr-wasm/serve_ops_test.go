package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A request in flight when the server is told to stop (SIGINT/SIGTERM
// cancel serve's context) is finished, and only then does serve return.
func TestServeFinishesRequestsInFlight(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokens, []byte(`{"`+tokAlice+`":"alice"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuffer{}
	base, done := startRaw(t, ctx, logs, "--auth-tokens", tokens, "--data", filepath.Join(dir, "data"))

	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"list_bookings","arguments":{}}}`
	conn, err := net.Dial("tcp", base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := "POST /mcp HTTP/1.1\r\nHost: " + base + "\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nAuthorization: Bearer " + tokAlice + "\r\n" +
		"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: list_bookings\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	half := len(body) / 2
	if _, err := io.WriteString(conn, head+body[:half]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the server is now reading the body

	cancel() // what SIGTERM does
	select {
	case code := <-done:
		t.Fatalf("serve returned %d with a request still in flight", code)
	case <-time.After(500 * time.Millisecond):
	}
	if _, err := io.WriteString(conn, body[half:]); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the request in flight got no response: %v", err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), `"bookings"`) || !strings.Contains(string(out), `"id":7`) {
		t.Fatalf("the request in flight: %d %s", resp.StatusCode, out)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited with %d after shutting down:\n%s", code, logs)
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not return after the request in flight finished")
	}
	// New connections are refused once it is down.
	if c, err := net.DialTimeout("tcp", base, time.Second); err == nil {
		c.Close()
		t.Fatal("the server still accepts connections after shutdown")
	}
}

// Without keys the server makes an ephemeral one and says, once and
// loudly, what that costs; without --auth-tokens it warns that everyone is
// anonymous. /healthz answers and /metrics speaks Prometheus.
func TestServeEphemeralKeyWarningAndOps(t *testing.T) {
	t.Setenv("MRTR_KEYS", "")
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncBuffer{}
	base, done := startRaw(t, ctx, stderr, "--data", filepath.Join(dir, "data"))
	defer func() {
		cancel()
		<-done
	}()
	out := stderr.String()
	if n := strings.Count(out, "ephemeral"); n == 0 {
		t.Errorf("no warning about the ephemeral key:\n%s", out)
	}
	for _, want := range []string{"restart", "instances"} {
		if !strings.Contains(out, want) {
			t.Errorf("the ephemeral-key warning does not say rounds will not survive a %s:\n%s", want, out)
		}
	}
	if strings.Count(out, "anonymous") != 1 {
		t.Errorf("want exactly one warning that every caller is anonymous:\n%s", out)
	}
	if strings.Contains(out, "k4.local.") {
		t.Errorf("the key reached the output:\n%s", out)
	}
	for path, want := range map[string]string{
		"/healthz": "ok",
		"/metrics": "# TYPE process_cpu_seconds_total counter",
	} {
		resp, err := http.Get("http://" + base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %d, want %q in:\n%.400s", path, resp.StatusCode, want, b)
		}
	}
}

// startRaw runs serve in this process until ctx ends and returns its
// address and the channel that gets its exit code.
func startRaw(t *testing.T, ctx context.Context, stderr *syncBuffer, extra ...string) (string, chan int) {
	t.Helper()
	addr := make(chan string, 1)
	done := make(chan int, 1)
	args := append([]string{"--addr", "127.0.0.1:0", "--wasm-cache", sharedCache, "--log-format", "json"}, extra...)
	go func() { done <- serve(ctx, args, nil, io.Discard, stderr, func(a string) { addr <- a }) }()
	select {
	case base := <-addr:
		return base, done
	case code := <-done:
		t.Fatalf("serve exited with %d:\n%s", code, stderr)
	case <-time.After(3 * time.Minute):
		t.Fatal("serve did not start")
	}
	return "", nil
}
