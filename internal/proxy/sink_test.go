package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestStreamHeadersWait: a streamed answer that follows at once goes out
// with its headers in one piece; a quiet stream gets its headers after
// streamHeaderDelay, before its first message.
func TestStreamHeadersWait(t *testing.T) {
	rec := httptest.NewRecorder()
	s := &httpSink{w: rec}
	s.Start()
	s.Final([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	if rec.Flushed || rec.Header().Get("Content-Type") != "text/event-stream" || !strings.Contains(rec.Body.String(), "data: ") {
		t.Fatalf("flushed %v, %q: %q", rec.Flushed, rec.Header().Get("Content-Type"), rec.Body.String())
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s := &httpSink{w: w}
		s.Start()
		time.Sleep(streamHeaderDelay + 400*time.Millisecond)
		s.Final([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}))
	defer srv.Close()
	start := time.Now()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if took := time.Since(start); took >= streamHeaderDelay+400*time.Millisecond || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("headers after %v (%q)", took, resp.Header.Get("Content-Type"))
	}
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), "data: ") {
		t.Fatalf("body %q", b)
	}
}
