package observe

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
)

// Guard is what the handlers need from *host.Guard (ask, resume, and run
// an effect exactly once through the ledger).
type Guard interface {
	Ask(ctx context.Context, req *host.Request, inputs []host.InputRequest, opts ...host.AskOption) (*host.InputRequiredResult, error)
	Resume(ctx context.Context, req *host.Request) (*host.Outcome, error)
	Once(ctx context.Context, out *host.Outcome, effect func(context.Context) ([]byte, error)) ([]byte, bool, error)
	Approve(ctx context.Context, req *host.Request) (*host.Outcome, error)
	OnceTx(ctx context.Context, out *host.Outcome, run func(context.Context, ledger.Op) (ledger.Claim, error)) ([]byte, bool, error)
}

// Metrics are the guard's Prometheus metrics (serve's and the proxy's).
type Metrics struct {
	Asks      *prometheus.CounterVec   // mrtr_asks_total{tool}
	Outcomes  *prometheus.CounterVec   // mrtr_outcomes_total{tool,outcome}
	Rejected  *prometheus.CounterVec   // mrtr_rejected_states_total{reason}
	GuardTime *prometheus.HistogramVec // mrtr_guard_seconds{op}
	Effects   *prometheus.CounterVec   // mrtr_effects_total{tool,result}
	// LegacyRounds counts input rounds fulfilled on legacy sessions
	// (mrtr_legacy_rounds_total{result}); LegacySessionsRefused counts
	// initialize requests refused at the session cap.
	LegacyRounds          *prometheus.CounterVec
	LegacySessionsRefused prometheus.Counter
}

// NewMetrics registers the metrics (and the Go and process collectors,
// whose process_cpu_seconds_total the load benchmark reads) on reg.
func NewMetrics(reg *prometheus.Registry) *Metrics {
	m := &Metrics{
		Asks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mrtr_asks_total", Help: "InputRequiredResults sealed (first asks and further rounds), by tool.",
		}, []string{"tool"}),
		Outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mrtr_outcomes_total", Help: "How guarded calls ended: complete, input_required, declined, cancelled, rejected (a refused state or answer), error.",
		}, []string{"tool", "outcome"}),
		Rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mrtr_rejected_states_total", Help: "requestStates refused, by the guard's internal reason (tampered, expired, principal, arguments, ...).",
		}, []string{"reason"}),
		GuardTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mrtr_guard_seconds",
			Help:    "Time spent in the guard per call (ask, resume; once includes the effect).",
			Buckets: []float64{25e-6, 50e-6, 100e-6, 200e-6, 400e-6, 800e-6, 1.6e-3, 3.2e-3, 6.4e-3, 12.8e-3, 25.6e-3, 51.2e-3, 0.1, 0.5},
		}, []string{"op"}),
		Effects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mrtr_effects_total", Help: "Side effects run through the ledger: run (first time), replay (stored result returned), error.",
		}, []string{"tool", "result"}),
		LegacyRounds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mrtr_legacy_rounds_total", Help: "Input rounds a legacy (2025-era) session's client was asked on its session: answered, client_error.",
		}, []string{"result"}),
		LegacySessionsRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mrtr_legacy_sessions_refused_total", Help: "initialize requests refused because the session cap was reached.",
		}),
	}
	reg.MustRegister(m.Asks, m.Outcomes, m.Rejected, m.GuardTime, m.Effects, m.LegacyRounds, m.LegacySessionsRefused,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

type instrumented struct {
	g Guard
	m *Metrics
}

// Instrument times every guard call into m.GuardTime and counts refused
// states by reason.
func Instrument(g Guard, m *Metrics) Guard { return &instrumented{g, m} }

func (i *instrumented) Ask(ctx context.Context, req *host.Request, in []host.InputRequest, opts ...host.AskOption) (*host.InputRequiredResult, error) {
	t := time.Now()
	r, err := i.g.Ask(ctx, req, in, opts...)
	i.m.GuardTime.WithLabelValues("ask").Observe(time.Since(t).Seconds())
	if err == nil {
		i.m.Asks.WithLabelValues(req.Target).Inc()
	}
	return r, err
}

func (i *instrumented) Resume(ctx context.Context, req *host.Request) (*host.Outcome, error) {
	t := time.Now()
	o, err := i.g.Resume(ctx, req)
	i.m.GuardTime.WithLabelValues("resume").Observe(time.Since(t).Seconds())
	if e, ok := host.AsError(err); ok && e.Code == host.CodeStateInvalid {
		reason := e.Reason
		if reason == "" {
			reason = "unknown"
		}
		i.m.Rejected.WithLabelValues(reason).Inc()
	}
	return o, err
}

func (i *instrumented) Once(ctx context.Context, out *host.Outcome, effect func(context.Context) ([]byte, error)) ([]byte, bool, error) {
	t := time.Now()
	r, replay, err := i.g.Once(ctx, out, effect)
	i.m.GuardTime.WithLabelValues("once").Observe(time.Since(t).Seconds())
	return r, replay, err
}

func (i *instrumented) OnceTx(ctx context.Context, out *host.Outcome, run func(context.Context, ledger.Op) (ledger.Claim, error)) ([]byte, bool, error) {
	t := time.Now()
	r, replay, err := i.g.OnceTx(ctx, out, run)
	i.m.GuardTime.WithLabelValues("once").Observe(time.Since(t).Seconds())
	return r, replay, err
}
