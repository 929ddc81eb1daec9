package upstream

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"
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
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\r",
		"data: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":1,\"result\":{}}\r\n\r",
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
		// The three line ends are one: a stream without CR reads the
		// same with its LFs written as CR or as CRLF, fed a byte at a time.
		if bytes.IndexByte(b, '\r') >= 0 {
			return
		}
		for _, end := range []string{"\r", "\r\n"} {
			alt := bytes.ReplaceAll(b, []byte("\n"), []byte(end))
			out2, err2 := u.readStream(context.Background(), iotest.OneByteReader(bytes.NewReader(alt)), nil)
			if !bytes.Equal(out, out2) || codeOf(err) != codeOf(err2) {
				t.Fatalf("line ends %q: %q %v, with LF: %q %v", end, out2, err2, out, err)
			}
		}
	})
}

func codeOf(err error) string {
	if e, ok := AsError(err); ok {
		return e.Code
	}
	return ""
}

// TestReadStreamLoneCR: an event stream whose lines end in a lone CR (the
// SSE format allows it) is read, and an event ended by CR is dispatched
// at once, without waiting for a byte that may never come. The reader
// took only LF and CRLF, and waited for the rest of the stream.
func TestReadStreamLoneCR(t *testing.T) {
	u := &HTTP{maxBody: 256}
	resp := `{"jsonrpc":"2.0","id":1,"result":{}}`
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		_, _ = pw.Write([]byte(": hi\rdata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\rdata: " + resp + "\r\r"))
	}()
	type result struct {
		out   []byte
		notes int
		err   error
	}
	done := make(chan result, 1)
	go func() {
		n := 0
		out, err := u.readStream(context.Background(), pr, func([]byte) error { n++; return nil })
		done <- result{out, n, err}
	}()
	select {
	case r := <-done:
		if r.err != nil || string(r.out) != resp || r.notes != 1 {
			t.Fatalf("got %q (%d notifications) %v", r.out, r.notes, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the response ended by CR was not dispatched: the reader waits for more of the stream")
	}
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

// TestReadStreamBufferReused: reading a small streamed answer allocates
// far less than the stream reader's 32 KiB buffer; one buffer per call was
// over half of what a proxied call allocated.
func TestReadStreamBufferReused(t *testing.T) {
	u := &HTTP{maxBody: 1 << 20}
	stream := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n"
	read := func() {
		if _, err := u.readStream(context.Background(), strings.NewReader(stream), nil); err != nil {
			t.Fatal(err)
		}
	}
	read()
	// TotalAlloc counts the whole process (goroutines that earlier tests
	// left running too): the least of a few batches, against a bound well
	// under one 32 KiB buffer.
	const n = 200
	per := uint64(1 << 62)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := 0; i < n; i++ {
			read()
		}
		runtime.ReadMemStats(&after)
		per = min(per, (after.TotalAlloc-before.TotalAlloc)/n)
	}
	if per > 16<<10 {
		t.Fatalf("%d bytes allocated per streamed answer: the reader's buffer is not reused", per)
	}
}
