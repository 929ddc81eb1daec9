package telemetry_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/telemetry"
	"github.com/mrtr-wasm/mrtr-wasm/internal/telemetry/otlptest"
)

func TestOffWithoutEnvironment(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
		{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
	} {
		for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"} {
			t.Setenv(k, env[k])
		}
		tel, err := telemetry.Setup(context.Background(), "test", "0")
		if err != nil || tel != nil || tel.Enabled() {
			t.Fatalf("%v: want off, got %v, %v", env, tel, err)
		}
	}
}

func TestUnsupportedSettingsAreErrors(t *testing.T) {
	for k, v := range map[string]string{"OTEL_TRACES_EXPORTER": "zipkin", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"} {
		t.Run(k, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv(k, v)
			_, err := telemetry.Setup(context.Background(), "test", "0")
			if err == nil || !strings.Contains(err.Error(), v) {
				t.Fatalf("want an error naming %q, got %v", v, err)
			}
		})
	}
}

// The spans reach a real OTLP/HTTP receiver with their parent links: the
// caller's traceparent header is the server span's parent, and the client
// span carries a traceparent of its own to pass upstream.
func TestSpansReachReceiverWithParents(t *testing.T) {
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_SERVICE_NAME", "proxy-under-test")
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx, "mrtr-wasm", "0.1.0")
	if err != nil || !tel.Enabled() {
		t.Fatalf("Setup: %v, %v", tel, err)
	}
	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	h := http.Header{"Traceparent": {"00-" + callerTrace + "-" + callerSpan + "-01"}}
	sctx, server := tel.StartServer(ctx, "tools/call", "book", h, "", "")
	gctx, guard := tel.StartStep(sctx, "guard ask")
	_, pol := tel.StartStep(gctx, "policy ask")
	pol.SetString("mrtr.policy.decision", "deny")
	pol.End(nil)
	guard.End(nil)
	_, step := tel.StartStep(sctx, "policy resume")
	step.End(errors.New("secret answer 1234 in an error"))
	cctx, client := tel.StartClient(sctx, "tools/call", "book")
	tp := telemetry.Traceparent(cctx)
	hdr := http.Header{}
	telemetry.Inject(cctx, hdr)
	if hdr.Get("traceparent") != tp || !strings.HasPrefix(tp, "00-"+callerTrace+"-") {
		t.Fatalf("traceparent %q, header %q", tp, hdr.Get("traceparent"))
	}
	client.End(nil)
	server.Fail("mrtr.state.invalid")
	server.End(nil)
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	spans := rcv.WaitFor(t, "tools/call book", 5*time.Second)
	byName := map[string]otlptest.Span{}
	for _, s := range spans {
		if s.Kind.String() == "SPAN_KIND_CLIENT" {
			byName["client"] = s
		} else {
			byName[s.Name] = s
		}
		if s.TraceID != callerTrace {
			t.Errorf("%s: trace %s, want the caller's %s", s.Name, s.TraceID, callerTrace)
		}
		if s.Service != "proxy-under-test" {
			t.Errorf("%s: service %q, want OTEL_SERVICE_NAME's", s.Name, s.Service)
		}
		for k, v := range s.Attrs {
			if strings.Contains(v, "1234") {
				t.Errorf("%s: attribute %s carries an error's text: %q", s.Name, k, v)
			}
		}
	}
	srv, cli := byName["tools/call book"], byName["client"]
	for name, want := range map[string]string{
		"tools/call book": callerSpan, "client": srv.SpanID, "guard ask": srv.SpanID,
		"policy ask": byName["guard ask"].SpanID, "policy resume": srv.SpanID,
	} {
		if got := byName[name].ParentID; got != want || got == "" {
			t.Errorf("%s: parent %q, want %q (spans %v)", name, got, want, otlptest.Names(spans))
		}
	}
	if srv.Kind.String() != "SPAN_KIND_SERVER" || !srv.Error || srv.Attrs["error.type"] != "mrtr.state.invalid" ||
		srv.Attrs["gen_ai.tool.name"] != "book" || srv.Attrs["mcp.method.name"] != "tools/call" {
		t.Errorf("server span: %+v", srv)
	}
	if !strings.HasSuffix(tp, "-"+cli.SpanID+"-01") {
		t.Errorf("traceparent %q does not name the client span %s", tp, cli.SpanID)
	}
	if p := byName["policy ask"]; p.Attrs["mrtr.policy.decision"] != "deny" {
		t.Errorf("policy ask span: %+v", p)
	}
	if p := byName["policy resume"]; !p.Error || p.Attrs["error.type"] != "*errors.errorString" {
		t.Errorf("policy resume span not failed: %+v", p)
	}
}

// The W3C traceparent in a request's _meta is the parent when there is no
// header (stdio).
func TestServerSpanParentFromMeta(t *testing.T) {
	rcv := otlptest.Start(t)
	tel, err := telemetry.Setup(context.Background(), "mrtr-wasm", "0")
	if err != nil {
		t.Fatal(err)
	}
	_, s := tel.StartServer(context.Background(), "prompts/get", "greet", nil, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "")
	s.End(nil)
	_ = tel.Shutdown(context.Background())
	got, _ := otlptest.Find(rcv.WaitFor(t, "prompts/get greet", 5*time.Second), "prompts/get greet")
	if got.TraceID != "0af7651916cd43dd8448eb211c80319c" || got.ParentID != "b7ad6b7169203331" || got.Attrs["gen_ai.prompt.name"] != "greet" {
		t.Fatalf("span %+v", got)
	}
}

// Off means no allocation at all on the request path.
func TestOffAllocatesNothing(t *testing.T) {
	var tel *telemetry.Telemetry
	ctx := context.Background()
	h := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	n := testing.AllocsPerRun(1000, func() { offPath(ctx, tel, h) })
	if n != 0 {
		t.Fatalf("tracing off allocates %.1f times per request", n)
	}
}

func offPath(ctx context.Context, tel *telemetry.Telemetry, h http.Header) {
	sctx, s := tel.StartServer(ctx, "tools/call", "book", h, "", "")
	gctx, g := tel.StartStep(sctx, "guard resume")
	g.SetString("k", "v")
	g.End(nil)
	cctx, c := tel.StartClient(gctx, "tools/call", "book")
	if telemetry.Traceparent(cctx) != "" {
		panic("traceparent while off")
	}
	c.End(errors.ErrUnsupported)
	s.End(nil)
}

func BenchmarkTracingOff(b *testing.B) {
	var tel *telemetry.Telemetry
	ctx := context.Background()
	h := http.Header{}
	b.ReportAllocs()
	for b.Loop() {
		offPath(ctx, tel, h)
	}
}

func BenchmarkTracingOn(b *testing.B) {
	otlptest.Start(b)
	tel, err := telemetry.Setup(context.Background(), "bench", "0")
	if err != nil {
		b.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	ctx := context.Background()
	h := http.Header{}
	b.ReportAllocs()
	for b.Loop() {
		sctx, s := tel.StartServer(ctx, "tools/call", "book", h, "", "")
		gctx, g := tel.StartStep(sctx, "guard resume")
		g.End(nil)
		cctx, c := tel.StartClient(gctx, "tools/call", "book")
		_ = telemetry.Traceparent(cctx)
		c.End(nil)
		s.End(nil)
	}
}

// The MCP semantic conventions: span names and the request's and
// response's attributes.
func TestSemanticConventions(t *testing.T) {
	rcv := otlptest.Start(t)
	tel, err := telemetry.Setup(context.Background(), "mrtr-wasm", "0")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, call := tel.StartServer(ctx, "tools/call", "book", nil, "", "")
	call.SetRequest("7", "2026-07-28", "", "tcp")
	call.SetResponseError(-32602)
	call.End(nil)
	_, read := tel.StartServer(ctx, "resources/read", "file:///home/ann/notes.txt", nil, "", "")
	read.SetRequest(`"r-1"`, "2025-11-25", "sess-1", "pipe")
	read.End(nil)
	_ = tel.Shutdown(ctx)
	spans := rcv.WaitFor(t, "resources/read", 5*time.Second)
	c, ok := otlptest.Find(spans, "tools/call book")
	if !ok {
		t.Fatalf("spans %v", otlptest.Names(spans))
	}
	for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "book", "gen_ai.operation.name": "execute_tool",
		"jsonrpc.request.id": "7", "jsonrpc.protocol.version": "2.0", "mcp.protocol.version": "2026-07-28", "network.transport": "tcp",
		"rpc.response.status_code": "-32602", "error.type": "-32602"} {
		if c.Attrs[k] != v {
			t.Errorf("tools/call %s = %q, want %q", k, c.Attrs[k], v)
		}
	}
	if !c.Error {
		t.Error("an error response did not fail the span")
	}
	r, ok := otlptest.Find(spans, "resources/read")
	if !ok || r.Attrs["mcp.resource.uri"] != "file:///home/ann/notes.txt" || r.Attrs["mcp.session.id"] != "sess-1" || r.Attrs["network.transport"] != "pipe" {
		t.Errorf("resources/read span (its URI stays out of the name): %+v", r)
	}
}
