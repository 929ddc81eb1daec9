// Package telemetry is mrtr-wasm's OpenTelemetry tracing: a server span
// per MCP request, a client span per upstream call (with the W3C
// traceparent passed on), and a span per guard step (ask, resume, once,
// policy).
//
// It is off unless the standard OTEL_* variables turn the OTLP exporter on
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or
// OTEL_TRACES_EXPORTER=otlp), and when off every call here returns at once
// without allocating: a nil *Telemetry is a valid, disabled one.
//
// The exporter speaks OTLP over HTTP/protobuf (the OTel default); the
// endpoint, headers, timeout, compression, TLS, sampler, batching and
// resource come from the standard variables, read by the OpenTelemetry
// SDK itself.
package telemetry
