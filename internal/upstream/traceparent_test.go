package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

const goodTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestValidTraceparent(t *testing.T) {
	for tp, want := range map[string]bool{
		goodTraceparent:  true,
		"":               false,
		"00-\xff\x80-01": false,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0":     false,
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01":    false, // uppercase
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01":    false, // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01":    false, // zero span id
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":    false,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\xff": false,
		"00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01":    false,
	} {
		if got := validTraceparent(tp); got != want {
			t.Errorf("validTraceparent(%q) = %v", tp, got)
		}
	}
}

// A client's traceparent that is not W3C (any bytes are legal in an HTTP
// header) is dropped: it once reached the child's _meta in Go quoting
// (\xff), which is not JSON, and the call hung.
func TestStdioDropsInvalidTraceparent(t *testing.T) {
	cfg, _ := childConfig(t, "ok")
	cfg.CallTimeout = 5 * time.Second
	s := startChild(t, cfg)
	for _, tp := range []string{"00-\xff\x80-01", "00-\U0001F600-01", "not a traceparent"} {
		raw, err := s.Call(context.Background(), toolCall("1", "echo", map[string]any{}, ""), http.Header{"Traceparent": {tp}}, nil)
		if err != nil {
			t.Fatalf("call with traceparent %q: %v", tp, err)
		}
		var meta map[string]any
		_ = json.Unmarshal(decode(t, raw).Result.Structured["meta"], &meta)
		if _, ok := meta["traceparent"]; ok {
			t.Fatalf("traceparent %q reached the child: %v", tp, meta)
		}
	}
}

// Whatever tp holds, the line for the child is JSON.
func TestRewriteRequestTraceparentIsJSON(t *testing.T) {
	m, err := parseMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := rewriteRequest(m, &call{id: 9}, "00-\xff\x80\u2028\"-01")
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(out) {
		t.Fatalf("the line for the child is not JSON: %q", out)
	}
}

// An HTTP upstream gets a client's traceparent only when it is valid, and
// its tracestate only with it.
func TestHTTPDropsInvalidTraceparent(t *testing.T) {
	got := make(chan http.Header, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}))
	defer ts.Close()
	u, err := NewHTTP(HTTPOptions{URL: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	for tp, want := range map[string]string{goodTraceparent: goodTraceparent, "00-\xff-01": "", "junk": ""} {
		h := http.Header{"Traceparent": {tp}, "Tracestate": {"k=v"}}
		if _, err := u.Call(context.Background(), msg, h, nil); err != nil {
			t.Fatal(err)
		}
		rh := <-got
		if rh.Get("Traceparent") != want || (want == "") != (rh.Get("Tracestate") == "") {
			t.Errorf("sent %q: the upstream got traceparent %q tracestate %q", tp, rh.Get("Traceparent"), rh.Get("Tracestate"))
		}
		if h.Get("Traceparent") != tp {
			t.Errorf("the caller's header was changed")
		}
	}
}
