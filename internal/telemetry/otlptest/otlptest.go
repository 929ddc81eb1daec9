// Package otlptest is a real OTLP/HTTP trace receiver for tests: an
// httptest server that decodes each export request with the OTel proto
// package and keeps the spans.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is a received span, flattened for assertions.
type Span struct {
	Name, TraceID, SpanID, ParentID string
	Kind                            tracepb.Span_SpanKind
	Error                           bool
	Attrs                           map[string]string
	Service                         string // the resource's service.name
}

// Receiver collects the spans exported to it.
type Receiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []Span
	bad   []string
}

// Start starts a receiver on 127.0.0.1 and points the standard OTEL_*
// variables of t at it (so the test may not be parallel).
func Start(t testing.TB) *Receiver {
	r := &Receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.srv.URL)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	return r
}

// URL is the receiver's base URL.
func (r *Receiver) URL() string { return r.srv.URL }

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		r.fail(req.Method + " " + req.URL.Path + " " + req.Header.Get("Content-Type"))
		http.Error(w, "unexpected request", http.StatusBadRequest)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			r.fail("gzip: " + err.Error())
			http.Error(w, "bad gzip", http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	var ex coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &ex)
	}
	if err != nil {
		r.fail("decode: " + err.Error())
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range ex.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				attrs := map[string]string{}
				for _, kv := range s.GetAttributes() {
					v := kv.GetValue()
					if sv, ok := v.GetValue().(*commonpb.AnyValue_StringValue); ok {
						attrs[kv.GetKey()] = sv.StringValue
					} else if iv, ok := v.GetValue().(*commonpb.AnyValue_IntValue); ok {
						attrs[kv.GetKey()] = strconv.FormatInt(iv.IntValue, 10)
					}
				}
				r.spans = append(r.spans, Span{
					Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()),
					SpanID: hex.EncodeToString(s.GetSpanId()), ParentID: hex.EncodeToString(s.GetParentSpanId()),
					Kind: s.GetKind(), Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
					Attrs: attrs, Service: service,
				})
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *Receiver) fail(s string) {
	r.mu.Lock()
	r.bad = append(r.bad, s)
	r.mu.Unlock()
}

// Spans returns the spans received so far, and fails t on any request
// the receiver could not decode.
func (r *Receiver) Spans(t testing.TB) []Span {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.bad {
		t.Errorf("OTLP receiver got a bad export: %s", b)
	}
	return append([]Span(nil), r.spans...)
}

// WaitFor waits until a span named name has arrived (export is batched)
// and returns every span received by then.
func (r *Receiver) WaitFor(t testing.TB, name string, timeout time.Duration) []Span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		spans := r.Spans(t)
		for _, s := range spans {
			if s.Name == name {
				return spans
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span %q within %s; got %v", name, timeout, Names(spans))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Find returns the first span named name.
func Find(spans []Span, name string) (Span, bool) {
	for _, s := range spans {
		if s.Name == name {
			return s, true
		}
	}
	return Span{}, false
}

// Names lists the spans' names.
func Names(spans []Span) []string {
	n := make([]string, len(spans))
	for i, s := range spans {
		n[i] = s.Name
	}
	return n
}
