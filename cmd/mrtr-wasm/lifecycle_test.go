package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/testenv"
)

// getStatus returns a GET's status and body.
func getStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// On SIGTERM (the end of proxyMain's context) the proxy turns not ready,
// refuses a new request with a retryable error, finishes the call in
// flight, and exits 0.
func TestProxyDrainsOnShutdown(t *testing.T) {
	bin := hostileChild(t)
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- proxyMain(ctx, []string{"--addr", "127.0.0.1:0", "--wasm-cache", sharedCache, "--log-format", "text",
			"--shutdown-timeout", "20s", "--", bin}, nil, io.Discard, logs, func(a string) { addr <- a })
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case code := <-done:
		t.Fatalf("proxy exited with %d:\n%s", code, logs)
	case <-time.After(2 * time.Minute):
		t.Fatalf("proxy did not start:\n%s", logs)
	}
	if code, body := getStatus(t, base+"/readyz"); code != http.StatusOK || !strings.Contains(body, `"ready"`) {
		t.Fatalf("readyz at start: %d %s", code, body)
	}
	slow := make(chan proxied, 1)
	go func() { slow <- proxyCall(t, base, "sleep", `{"ms":1500}`, nil) }()
	time.Sleep(300 * time.Millisecond) // the call is in flight at the child
	cancel()                           // what SIGTERM does
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body := getStatus(t, base+"/readyz")
		if code == http.StatusServiceUnavailable && strings.Contains(body, "draining") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz while draining: %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, _ := getStatus(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("healthz while draining: %d, want 200 (the process lives)", code)
	}
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var refusal struct {
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &refusal)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || refusal.Error.Code != -32000 {
		t.Errorf("a new request while draining: %d Retry-After=%q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	select {
	case r := <-slow:
		if r.Error != nil || len(r.Result.Content) == 0 || r.Result.Content[0].Text != "slept" {
			t.Errorf("the call in flight: %+v", r)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the call in flight did not finish")
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, logs)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the proxy did not stop:\n%s", logs)
	}
}

// /readyz follows the ledger: a Redis that does not answer makes the
// proxy not ready (it fails closed), and it is ready again once Redis
// answers, without a restart.
func TestReadyzFollowsTheLedger(t *testing.T) {
	testenv.Require(t, testenv.RedisServer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	base, _ := startProxy(t, "--ledger", "redis://127.0.0.1:"+strconv.Itoa(port)+"/0", "--", hostileChild(t))
	code, body := getStatus(t, base+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"ledger":"unavailable"`) {
		t.Fatalf("readyz without Redis: %d %s", code, body)
	}
	if strings.Contains(body, "127.0.0.1") {
		t.Errorf("readyz shows the ledger's address: %s", body)
	}
	redis := exec.Command(testenv.RedisServer, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := redis.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = redis.Process.Kill(); _ = redis.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body = getStatus(t, base+"/readyz")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz with Redis back: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
