package server_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/server"
)

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// TestRunStdioFirstLineBounded: the first stdio message, read to pick the
// era, is bounded as an HTTP body is. A client that sent no newline used
// to have everything it sent buffered.
func TestRunStdioFirstLineBounded(t *testing.T) {
	store := newStore(t)
	s, err := server.New(server.Config{Guard: newGuard(t), CRM: store, PublicURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("a", server.MaxBody) + `"}}`)
	var out bytes.Buffer
	err = s.RunStdio(ctx, in, nopCloser{&out})
	if err == nil || !strings.Contains(err.Error(), "over") {
		t.Fatalf("a first line over %d bytes: %v", server.MaxBody, err)
	}
}
