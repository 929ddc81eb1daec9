package upstream

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// FuzzReadStream: any event stream ends in a response, a typed error, or
// a relayed message, never a panic, and never an event over the limit.
func FuzzReadStream(f *testing.F) {
	for _, s := range []string{
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		": comment\r\nid: 3\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":1,\"error\":{\"code\":1,\"message\":\"x\"}}\r\n\r\n",
		"data: garbage\n\n",
		"data: {\"a\":1}",
		"data\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n" + strings.Repeat("data:\n", 300) + "\n",
	} {
		f.Add([]byte(s))
	}
	u := &HTTP{maxBody: 256}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := u.readStream(context.Background(), bytes.NewReader(b), func(raw []byte) error {
			if len(raw) > 256 {
				t.Fatalf("an event over the limit was relayed: %d bytes", len(raw))
			}
			return nil
		})
		if len(out) > 256 {
			t.Fatalf("a response over the limit was returned: %d bytes", len(out))
		}
		if ok, cerr := classify(out); err == nil && (cerr != nil || !ok) {
			t.Fatalf("not a response: %q", out)
		}
		if err != nil {
			if _, ok := AsError(err); !ok {
				t.Fatalf("untyped error: %v", err)
			}
		}
	})
}

// TestReadStreamDataLines: a bare "data" is an empty data line, and the
// newlines between an event's data lines count toward its limit.
func TestReadStreamDataLines(t *testing.T) {
	u := &HTTP{maxBody: 256}
	resp := `{"jsonrpc":"2.0","id":1,"result":{}}`
	out, err := u.readStream(context.Background(), strings.NewReader("data\ndata: "+resp+"\n\n"), nil)
	if err != nil || string(out) != "\n"+resp {
		t.Fatalf("bare data line: %q %v", out, err)
	}
	_, err = u.readStream(context.Background(), strings.NewReader("data: "+resp+"\n"+strings.Repeat("data:\n", 300)+"\n"), nil)
	if e, ok := AsError(err); !ok || e.Code != CodeTooLarge {
		t.Fatalf("an event of %d bytes of newlines: %v, want %s", len(resp)+300, err, CodeTooLarge)
	}
}
