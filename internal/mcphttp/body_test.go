package mcphttp

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReadBody: the body is read once for every wrapper, each wrapper
// holds it to its own limit, and the next reader (the SDK) reads it whole.
func TestReadBody(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`
	for _, length := range []int64{int64(len(body)), -1, 5, 1 << 30} {
		r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		r.ContentLength = length // announced right, not at all, too short, beyond the limit
		w := httptest.NewRecorder()
		// (net/http's server stops a body at its Content-Length; this
		// reader does not, so a short announcement must not cut it.)
		b1, err := ReadBody(w, r, 1<<20)
		if err != nil || string(b1) != body {
			t.Fatalf("length %d: %q %v", length, b1, err)
		}
		b2, err := ReadBody(w, r, 1<<20)
		if err != nil || &b2[0] != &b1[0] {
			t.Fatalf("length %d: the second read copied or failed: %v", length, err)
		}
		if _, err := ReadBody(w, r, 10); !errors.Is(err, ErrBodyTooLarge) {
			t.Fatalf("length %d: a smaller limit let the body through: %v", length, err)
		}
		got, err := io.ReadAll(r.Body)
		if err != nil || string(got) != body {
			t.Fatalf("length %d: the next reader got %q %v", length, got, err)
		}
	}
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(strings.Repeat("x", 100)))
	if _, err := ReadBody(httptest.NewRecorder(), r, 99); !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("a body beyond the limit: %v", err)
	}
}
