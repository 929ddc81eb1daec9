package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// scope is the instrumentation scope of every span.
const scope = "github.com/mrtr-wasm/mrtr-wasm"

// Telemetry holds the tracer. A nil *Telemetry is off.
type Telemetry struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
}

// Setup turns tracing on when the environment asks for it, and returns nil
// (off, no error) when it does not. service and version name this process
// when OTEL_SERVICE_NAME does not.
func Setup(ctx context.Context, service, version string) (*Telemetry, error) {
	on, err := exporterFromEnv(os.Getenv)
	if err != nil || !on {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	// The environment (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) wins
	// over our defaults: the later resource in Merge takes precedence.
	env, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("OTEL resource: %w", err)
	}
	ours := resource.NewSchemaless(attribute.String("service.name", service), attribute.String("service.version", version))
	res, err := resource.Merge(ours, env)
	if err != nil {
		return nil, fmt.Errorf("OTEL resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Telemetry{tp: tp, tracer: tp.Tracer(scope)}, nil
}

// exporterFromEnv says whether the variables turn the OTLP exporter on.
// The spec's default exporter is otlp, but a process that nobody
// configured must not try to reach localhost:4318, so an endpoint or an
// explicit OTEL_TRACES_EXPORTER=otlp is needed.
func exporterFromEnv(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	exporter := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	switch exporter {
	case "none":
		return false, nil
	case "", "otlp":
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q is not supported (use otlp or none)", exporter)
	}
	if exporter == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return false, nil
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return false, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q is not supported (use http/protobuf)", proto)
	}
	return true, nil
}

// Enabled reports whether spans are recorded and exported.
func (t *Telemetry) Enabled() bool { return t != nil }

// Shutdown flushes the spans not yet exported and stops the exporter.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Span is a span in progress; the zero Span (tracing off) does nothing.
type Span struct{ s trace.Span }

// End ends the span, marking it failed when err is not nil. Only the
// error's type is recorded, never its text: an error may carry what a user
// typed. End(nil) keeps what Fail recorded.
func (s Span) End(err error) {
	if s.s == nil {
		return
	}
	if err != nil {
		s.s.SetStatus(codes.Error, "")
		s.s.SetAttributes(attribute.String("error.type", errorType(err)))
	}
	s.s.End()
}

// SetString sets an attribute.
func (s Span) SetString(key, value string) {
	if s.s != nil {
		s.s.SetAttributes(attribute.String(key, value))
	}
}

// SetInt sets an attribute.
func (s Span) SetInt(key string, value int) {
	if s.s != nil {
		s.s.SetAttributes(attribute.Int(key, value))
	}
}

// Fail marks the span failed with a stable code (a JSON-RPC error code, a
// guard error code) without ending it.
func (s Span) Fail(errorType string) {
	if s.s != nil {
		s.s.SetStatus(codes.Error, "")
		s.s.SetAttributes(attribute.String("error.type", errorType))
	}
}

// errorType names an error for error.type; callers that know a stable
// code (a guard or upstream error code) set it with Fail instead.
func errorType(err error) string {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return "jsonrpc." + strconv.FormatInt(je.Code, 10)
	}
	if errors.Is(err, context.Canceled) {
		return "canceled"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "deadline_exceeded"
	}
	return fmt.Sprintf("%T", err)
}

// StartServer starts the server span of an MCP request. Its parent is the
// caller's W3C trace context: the traceparent HTTP header when h has one,
// else the traceparent (and tracestate) from the request's _meta (the MCP
// convention, and the only carrier on stdio). target is the tool or prompt
// name or resource URI, or "".
func (t *Telemetry) StartServer(ctx context.Context, method, target string, h http.Header, metaTraceparent, metaTracestate string) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	var carrier propagation.TextMapCarrier
	if h != nil && h.Get("traceparent") != "" {
		carrier = propagation.HeaderCarrier(h)
	} else if metaTraceparent != "" {
		carrier = propagation.MapCarrier{"traceparent": metaTraceparent, "tracestate": metaTracestate}
	}
	if carrier != nil {
		ctx = propagation.TraceContext{}.Extract(ctx, carrier)
	}
	return t.start(ctx, method, target, trace.SpanKindServer)
}

// StartClient starts the client span of a call to an upstream server.
// Pass its context on: Traceparent reads it from there.
func (t *Telemetry) StartClient(ctx context.Context, method, target string) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	return t.start(ctx, method, target, trace.SpanKindClient)
}

// StartStep starts an internal span for a step of the guard ("guard ask",
// "policy resume", ...).
func (t *Telemetry) StartStep(ctx context.Context, name string) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	ctx, s := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal))
	return ctx, Span{s}
}

func (t *Telemetry) start(ctx context.Context, method, target string, kind trace.SpanKind) (context.Context, Span) {
	ctx, s := t.tracer.Start(ctx, SpanName(method, target), trace.WithSpanKind(kind), trace.WithAttributes(attributes(method, target)...))
	return ctx, Span{s}
}

// SpanName is the MCP semantic conventions' span name, "{mcp.method.name}
// {target}": the target is a tool's or a prompt's name; a resource's URI
// stays out of the name (it would make one name per resource).
func SpanName(method, target string) string {
	if target != "" && (method == "tools/call" || method == "prompts/get") {
		return method + " " + target
	}
	return method
}

// attributes are the conventions' attributes of an MCP request.
func attributes(method, target string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method), attribute.String("jsonrpc.protocol.version", "2.0")}
	switch {
	case method == "tools/call":
		attrs = append(attrs, attribute.String("gen_ai.operation.name", "execute_tool"))
		if target != "" {
			attrs = append(attrs, attribute.String("gen_ai.tool.name", target))
		}
	case method == "prompts/get" && target != "":
		attrs = append(attrs, attribute.String("gen_ai.prompt.name", target))
	case method == "resources/read" && target != "":
		attrs = append(attrs, attribute.String("mcp.resource.uri", target))
	}
	return attrs
}

// SetRequest records the request's place on the wire: its JSON-RPC id,
// the MCP revision it speaks, its session (2025-era clients; "" for none)
// and the transport ("tcp" for HTTP, "pipe" for stdio).
func (s Span) SetRequest(id, protocolVersion, sessionID, transport string) {
	if s.s == nil {
		return
	}
	attrs := []attribute.KeyValue{attribute.String("mcp.protocol.version", protocolVersion), attribute.String("network.transport", transport)}
	if id != "" {
		attrs = append(attrs, attribute.String("jsonrpc.request.id", id))
	}
	if sessionID != "" {
		attrs = append(attrs, attribute.String("mcp.session.id", sessionID))
	}
	s.s.SetAttributes(attrs...)
}

// SetResponseError records a JSON-RPC error response: its code as
// rpc.response.status_code and error.type, and the span failed.
func (s Span) SetResponseError(code int64) {
	if s.s == nil {
		return
	}
	c := strconv.FormatInt(code, 10)
	s.s.SetStatus(codes.Error, "")
	s.s.SetAttributes(attribute.String("rpc.response.status_code", c), attribute.String("error.type", c))
}

// Traceparent returns the W3C traceparent of the span in ctx (to send
// upstream), or "" when there is none (tracing off).
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// Inject writes the span in ctx as traceparent (and tracestate) headers.
func Inject(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	}
}
