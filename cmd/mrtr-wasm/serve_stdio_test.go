package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeStdio speaks 2026-07-28 over stdin/stdout: server/discover,
// a guarded tools/call, and a request without the required _meta.
func TestServeStdio(t *testing.T) {
	dir := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- serve(ctx, []string{"--stdio", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--wasm-cache", sharedCache}, inR, outW, logs, nil)
		outW.Close()
	}()
	defer func() {
		inW.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("serve --stdio did not stop")
		}
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	rpc := func(msg string) map[string]json.RawMessage {
		t.Helper()
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatalf("no answer to %s; logs:\n%s", msg, logs)
		}
		var r map[string]json.RawMessage
		if err := json.Unmarshal(lines.Bytes(), &r); err != nil {
			t.Fatalf("stdout is not JSON-RPC: %q", lines.Text())
		}
		return r
	}
	m := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`
	r := rpc(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + m + `}}`)
	if !strings.Contains(string(r["result"]), `"supportedVersions":["2026-07-28"]`) || !strings.Contains(string(r["result"]), `"resultType":"complete"`) {
		t.Fatalf("discover: %s", r["result"])
	}
	r = rpc(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + m + `,"name":"book_demo_call","arguments":{}}}`)
	if !strings.Contains(string(r["result"]), `"resultType":"input_required"`) || !strings.Contains(string(r["result"]), `"requestState":"v4.local.`) {
		t.Fatalf("book_demo_call: %s", r["result"])
	}
	r = rpc(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`)
	if !strings.Contains(string(r["error"]), `-32602`) || string(r["id"]) != "3" {
		t.Fatalf("no _meta: want -32602, got %v", r)
	}
}
