// Package observe is the guard's observability, shared by serve and the
// proxy: the Prometheus metrics (Metrics, Instrument), a span per guard
// step and policy evaluation (TraceGuard, TracePolicy, StartGuardStep,
// RecordPolicyVerdict, EndStep) and the SDK middleware that starts a
// server span per MCP request (ServerSpans).
//
// A span or a label carries a stable error code, never an error's text.
package observe
