package upstream

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mrtr-wasm/mrtr-wasm/internal/rawjson"
	"github.com/mrtr-wasm/mrtr-wasm/internal/telemetry"
)

// Traced wraps u with a client span per call; the span's traceparent goes
// upstream in h (an HTTP upstream sends it as a header, a stdio child gets
// it in _meta). With tracing off it returns u itself.
func Traced(u Upstream, tel *telemetry.Telemetry) Upstream {
	if !tel.Enabled() {
		return u
	}
	return &traced{u, tel}
}

type traced struct {
	Upstream
	tel *telemetry.Telemetry
}

func (t *traced) Call(ctx context.Context, msg []byte, h http.Header, onMessage func(raw []byte) error) ([]byte, error) {
	method, target := methodAndTarget(msg)
	ctx, span := t.tel.StartClient(ctx, method, target)
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Del("Traceparent")
	h.Del("Tracestate")
	telemetry.Inject(ctx, h)
	resp, err := t.Upstream.Call(ctx, msg, h, onMessage)
	if e, ok := AsError(err); ok {
		span.Fail(e.Code)
		span.End(nil)
		return resp, err
	}
	if err == nil {
		if m, perr := parseMessage(resp); perr == nil {
			if e, ok := m.get("error"); ok {
				var je struct {
					Code int `json:"code"`
				}
				_ = json.Unmarshal(m.value(e), &je)
				span.SetResponseError(int64(je.Code))
			}
		}
	}
	span.End(err)
	return resp, err
}

// methodAndTarget names a request for its span: the method, and the tool
// or prompt name or resource URI.
func methodAndTarget(msg []byte) (string, string) {
	m, err := parseMessage(msg)
	if err != nil {
		return "", ""
	}
	_, pms, _, err := paramsObject(m)
	if err != nil {
		return m.method, ""
	}
	key := "name"
	if m.method == "resources/read" {
		key = "uri"
	}
	p, _ := m.get("params")
	var target string
	if v, ok := rawjson.Find(pms, key); ok {
		_ = json.Unmarshal(m.raw[p.Start+v.Start:p.Start+v.End], &target)
	}
	return m.method, target
}

// Discovery is the traced upstream's, when it has one: tracing does not
// hide a legacy upstream's era from the proxy.
func (t *traced) Discovery() (json.RawMessage, bool) {
	if d, ok := t.Upstream.(interface {
		Discovery() (json.RawMessage, bool)
	}); ok {
		return d.Discovery()
	}
	return nil, false
}

// validTraceparent reports whether tp is a W3C traceparent of version 00:
// "00-" 32 lowercase hex digits (not all zero) "-" 16 (not all zero) "-"
// 2. A client's header that is not one is dropped rather than relayed: it
// would be no trace context to the upstream, and its bytes (obs-text is
// legal in an HTTP header) are not safe to splice into a child's JSON.
func validTraceparent(tp string) bool {
	if len(tp) != 55 || tp[:3] != "00-" || tp[35] != '-' || tp[52] != '-' {
		return false
	}
	hex := func(s string) (nonzero, ok bool) {
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c >= '1' && c <= '9' || c >= 'a' && c <= 'f':
				nonzero = true
			case c == '0':
			default:
				return false, false
			}
		}
		return nonzero, true
	}
	trace, ok1 := hex(tp[3:35])
	span, ok2 := hex(tp[36:52])
	_, ok3 := hex(tp[53:55])
	return trace && span && ok1 && ok2 && ok3
}

// withoutInvalidTrace returns h without its Traceparent and Tracestate
// when the Traceparent is not valid (W3C: a tracestate is read only with
// the traceparent it belongs to). h itself is not changed.
func withoutInvalidTrace(h http.Header) http.Header {
	tp, ok := h["Traceparent"]
	if !ok || len(tp) == 1 && validTraceparent(tp[0]) {
		return h
	}
	h = h.Clone()
	h.Del("Traceparent")
	h.Del("Tracestate")
	return h
}
