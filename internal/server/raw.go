package server

// The guard checks the bytes the client sent. The SDK decodes params into
// Go values (duplicate keys collapse, numbers pass through float64), so
// the transports' wrappers (CheckRequests, CheckStdio) read the raw
// arguments, inputResponses and clientCapabilities out of the request as
// sent, in the same pass that reads _meta, and file them under the
// request's identity; HostRequest takes them from there.
//
// The members the guard reads must not be ambiguous: a JSON-RPC message,
// its params or its _meta with a key given twice, or two keys that differ
// only in case, is refused (-32600 / -32602), since a parser that keeps the
// first and one that keeps the last would see different requests.

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/rawjson"
)

// rawCall is what one request carried, as sent.
type rawCall struct {
	arguments      json.RawMessage
	inputResponses json.RawMessage
	capabilities   json.RawMessage
	meta           map[string]json.RawMessage
}

// rawMessage is a JSON-RPC message's members, as sent, and its params as
// scanParams reads them (call is nil, and paramsErr set, when they cannot
// be read; call is empty when there are none).
type rawMessage struct {
	id        json.RawMessage
	method    string
	params    json.RawMessage
	call      *rawCall
	paramsErr error
}

var errAmbiguous = errors.New("ambiguous JSON")

// ambiguousError names the duplicated member.
type ambiguousError struct{ where, key string }

func (e *ambiguousError) Error() string {
	return "duplicate key (or keys differing only in case) in " + e.where + ": " + quoteKey(e.key)
}
func (e *ambiguousError) Unwrap() error { return errAmbiguous }

func quoteKey(k string) string {
	if len(k) > 64 {
		k = k[:64] + "…"
	}
	b, _ := json.Marshal(k)
	return string(b)
}

// scanMessage reads the top level of a JSON-RPC message and, in the same
// walk, its params (what scanParams reads): the answers inside are passed
// over once. ok is false when body is not one JSON object (a batch or bad
// JSON: the SDK refuses it).
func scanMessage(body []byte) (m rawMessage, ok bool, err error) {
	var sc objectScanner
	end, err := sc.walk(body, rawjson.SkipSpace(body, 0), "the message", func(k string, at int) (int, bool) {
		if k == "params" {
			end := 0
			if m.call, end, m.paramsErr = scanParamsAt(body, at); m.paramsErr == nil {
				m.params = body[at:end:end]
				return end, true
			}
			m.call = nil // not an object, or ambiguous: find its end the plain way
		}
		end := rawjson.SkipValue(body, at)
		if end <= at {
			return 0, false
		}
		v := body[at:end:end]
		switch k {
		case "id":
			m.id = v
		case "method":
			_ = json.Unmarshal(v, &m.method)
		case "params":
			m.params = v
		}
		return end, true
	})
	if err == nil && rawjson.SkipSpace(body, end) != len(body) {
		err = errSyntax
	}
	if m.params == nil {
		m.call = &rawCall{}
	}
	if errors.Is(err, errAmbiguous) {
		return m, true, err
	}
	return m, err == nil, nil
}

// scanParams reads a request's params: the raw values the guard needs and
// the _meta members the protocol checks read.
func scanParams(params []byte) (*rawCall, error) {
	if len(params) == 0 {
		return &rawCall{}, nil
	}
	rc, end, err := scanParamsAt(params, rawjson.SkipSpace(params, 0))
	if err == nil && rawjson.SkipSpace(params, end) != len(params) {
		return nil, errSyntax
	}
	return rc, err
}

// scanParamsAt reads the params object that starts at b[i] and returns
// the index after it.
func scanParamsAt(b []byte, i int) (*rawCall, int, error) {
	rc := &rawCall{}
	var sc objectScanner
	var meta []byte
	end, err := sc.walk(b, i, "params", func(k string, at int) (int, bool) {
		end := rawjson.SkipValue(b, at)
		if end <= at {
			return 0, false
		}
		switch v := b[at:end:end]; k {
		case "arguments":
			rc.arguments = v
		case "inputResponses":
			rc.inputResponses = v
		case "_meta":
			meta = v
		}
		return end, true
	})
	if err != nil {
		return nil, 0, err
	}
	if len(meta) > 0 && meta[0] == '{' {
		rc.meta = map[string]json.RawMessage{}
		if err := sc.members(meta, "params._meta", func(k string, v []byte) { rc.meta[k] = v }); err != nil {
			return nil, 0, err
		}
		rc.capabilities = rc.meta[mcphttp.MetaClientCapabilities]
	}
	return rc, end, nil
}

// objectScanner walks the members of one JSON object without decoding
// the values. It checks the syntax only as far as it needs to find the
// values' ends; the SDK and the guard parse what they read.
type objectScanner struct {
	keys []string
	fold map[string]struct{}
}

var errSyntax = errors.New("not a JSON object")

// members calls fn with each member of the object that is all of b.
func (sc *objectScanner) members(b []byte, where string, fn func(key string, val []byte)) error {
	end, err := sc.walk(b, rawjson.SkipSpace(b, 0), where, func(k string, at int) (int, bool) {
		end := rawjson.SkipValue(b, at)
		if end <= at {
			return 0, false
		}
		fn(k, b[at:end:end])
		return end, true
	})
	if err == nil && rawjson.SkipSpace(b, end) != len(b) {
		return errSyntax
	}
	return err
}

// walk reads the members of the object that starts at b[i] and returns
// the index after it. value is given each member's key and the index of
// its value, and returns the index after the value (false: not a value).
func (sc *objectScanner) walk(b []byte, i int, where string, value func(key string, at int) (int, bool)) (int, error) {
	sc.keys, sc.fold = sc.keys[:0], nil
	if i >= len(b) || b[i] != '{' {
		return 0, errSyntax
	}
	i = rawjson.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, errSyntax
		}
		end := rawjson.SkipString(b, i)
		if end <= i {
			return 0, errSyntax
		}
		key := string(b[i+1 : end-1])
		if bytes.IndexByte(b[i:end], '\\') >= 0 {
			if json.Unmarshal(b[i:end], &key) != nil {
				return 0, errSyntax
			}
		}
		if sc.seen(key) {
			return 0, &ambiguousError{where, key}
		}
		i = rawjson.SkipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, errSyntax
		}
		i = rawjson.SkipSpace(b, i+1)
		vend, ok := value(key, i)
		if !ok {
			return 0, errSyntax
		}
		i = rawjson.SkipSpace(b, vend)
		if i >= len(b) {
			return 0, errSyntax
		}
		if b[i] == '}' {
			return i + 1, nil
		}
		if b[i] != ',' {
			return 0, errSyntax
		}
		i = rawjson.SkipSpace(b, i+1)
	}
}

// seen records key and reports whether it, or a key equal to it up to
// case as encoding/json ignores it, came before: "reque\u017ftState" (a
// long s) is requestState to it, though its bytes are longer.
func (sc *objectScanner) seen(key string) bool {
	const linear = 16
	if sc.fold == nil && len(sc.keys) < linear {
		for _, k := range sc.keys {
			if k == key || strings.EqualFold(k, key) {
				return true
			}
		}
		sc.keys = append(sc.keys, key)
		return false
	}
	if sc.fold == nil {
		sc.fold = make(map[string]struct{}, 2*linear)
		for _, k := range sc.keys {
			sc.fold[rawjson.FoldName(k)] = struct{}{}
		}
	}
	f := rawjson.FoldName(key)
	if _, dup := sc.fold[f]; dup {
		return true
	}
	sc.fold[f] = struct{}{}
	return false
}

// --- filing the raw params under the request's identity -------------------

// captured maps the identity of a request's header map (HTTP: the
// request's own; stdio: one made for it) to what it carried. The SDK
// hands the same map to the handler in RequestExtra.Header.
var captured sync.Map // unsafe.Pointer -> *rawCall

func headerID(h http.Header) unsafe.Pointer { return reflect.ValueOf(h).UnsafePointer() }

// fileHTTP files rc for the HTTP request with header h until done is
// called (when the handler has answered).
func fileHTTP(h http.Header, rc *rawCall) (done func()) {
	id := headerID(h)
	captured.Store(id, rc)
	return func() { captured.Delete(id) }
}

// fileStdio gives req an Extra of its own and files rc under it until the
// request is gone.
func fileStdio(req *jsonrpc.Request, rc *rawCall) {
	extra, _ := req.Extra.(*mcp.RequestExtra)
	if extra == nil {
		extra = &mcp.RequestExtra{}
		req.Extra = extra
	}
	if extra.Header == nil {
		extra.Header = http.Header{}
	}
	id := headerID(extra.Header)
	captured.Store(id, rc)
	runtime.AddCleanup(extra, func(id unsafe.Pointer) { captured.Delete(id) }, id)
}

// rawOf returns what the request carried, as sent.
func rawOf(extra *mcp.RequestExtra) (*rawCall, error) {
	if extra != nil && extra.Header != nil {
		if rc, ok := captured.Load(headerID(extra.Header)); ok {
			return rc.(*rawCall), nil
		}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: "internal error: the request's bytes were not captured (serve MCP through CheckRequests or CheckStdio)"}
}
