package main

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
)

// TestServeHTTPReadTimeout: the listener serve and proxy share bounds
// how long a body may take (a client that stalls gets 408 and its request
// never reaches the MCP handler), and never cuts a handler that outlives
// that bound once the body is in, nor a GET stream.
func TestServeHTTPReadTimeout(t *testing.T) {
	const d = 300 * time.Millisecond
	var reached atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if _, err := mcphttp.ReadBody(w, r, mcphttp.MaxBody); err != nil {
				mcphttp.WriteBodyError(w, err, mcphttp.MaxBody)
				return
			}
		}
		reached.Add(1)
		select {
		case <-r.Context().Done():
			fmt.Fprint(w, "cancelled")
		case <-time.After(3 * d):
			fmt.Fprint(w, "done")
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs, _ := serveHTTP(ln, h, d, slog.New(slog.DiscardHandler), "", nil)
	defer hs.Close()

	send := func(req string) (int, string) {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no response: %v", err)
		}
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	const head = "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n"
	body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`

	start := time.Now()
	code, got := send(fmt.Sprintf(head, len(body)+50) + body) // 50 bytes never come
	if code != http.StatusRequestTimeout || !strings.Contains(got, "not received in time") || reached.Load() != 0 {
		t.Fatalf("stalled body: HTTP %d %q, handler reached %d times", code, got, reached.Load())
	}
	if el := time.Since(start); el < d || el > 5*time.Second {
		t.Fatalf("stalled body answered after %v (timeout %v)", el, d)
	}
	if code, got := send(fmt.Sprintf(head, len(body)) + body); code != 200 || got != "done" {
		t.Fatalf("a call that outlives the read timeout: HTTP %d %q", code, got)
	}
	if code, got := send("GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n"); code != 200 || got != "done" {
		t.Fatalf("a GET stream that outlives the read timeout: HTTP %d %q", code, got)
	}
}
