package mcphttp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
)

// ErrBodyTooLarge is ReadBody's error for a body beyond its limit.
var ErrBodyTooLarge = errors.New("request body too large")

// ReadBody reads a request's body once for every wrapper in front of the
// SDK (the legacy router, the checks here, serve's raw capture): the
// first call reads it, sized by Content-Length when the client sent one,
// and replaces r.Body with a reader of the bytes that the next ReadBody
// takes as they are instead of copying them again. Each call holds the
// body to its own max. The bytes are shared: callers must not change them.
func ReadBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	var body []byte
	if rb, ok := r.Body.(*readBody); ok {
		body = rb.b
	} else {
		var err error
		if body, err = readAll(http.MaxBytesReader(w, r.Body, max), r.ContentLength, max); err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, ErrBodyTooLarge
			}
			return nil, err
		}
	}
	if int64(len(body)) > max {
		return nil, ErrBodyTooLarge
	}
	r.Body = &readBody{Reader: bytes.NewReader(body), b: body}
	return body, nil
}

// readBody is a body already read: a fresh reader over its bytes.
type readBody struct {
	*bytes.Reader
	b []byte
}

func (*readBody) Close() error { return nil }

// maxPrealloc bounds what an announced Content-Length reserves before the
// bytes arrive: a client that announces 1 MiB and sends nothing must not
// hold 1 MiB of the server's memory per connection.
const maxPrealloc = 64 << 10

// readAll is io.ReadAll into one buffer of the announced size (one byte
// more, to see the end), so a body is not copied as the buffer grows.
func readAll(rd io.Reader, length, max int64) ([]byte, error) {
	if length < 0 || length > max {
		return io.ReadAll(rd)
	}
	b := make([]byte, 0, min(length+1, maxPrealloc))
	for {
		n, err := rd.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // longer than announced: grow as io.ReadAll does
		}
	}
}

// WriteBodyError answers a request whose body ReadBody could not take:
// 413 beyond max, 408 when it did not arrive before the server's read
// timeout, 400 otherwise. The connection is closed after it.
func WriteBodyError(w http.ResponseWriter, err error, max int64) {
	w.Header().Set("Connection", "close")
	var ne net.Error
	switch {
	case errors.Is(err, ErrBodyTooLarge):
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes", max), http.StatusRequestEntityTooLarge)
	case errors.As(err, &ne) && ne.Timeout():
		http.Error(w, "request body not received in time", http.StatusRequestTimeout)
	default:
		http.Error(w, "failed to read the body", http.StatusBadRequest)
	}
}
