package proxy

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
)

// newDroppedCounter registers mrtr_proxy_dropped_answer_fields_total: what
// the guard left out of a retry's answers before they could reach the
// upstream. Its one label is a closed set; the names go to the log only.
func newDroppedCounter(r prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mrtr_proxy_dropped_answer_fields_total",
		Help: "What the guard left out of the client's answers, never forwarded upstream: field (a form field the form did not ask), member (a member of an answer beside those checked, e.g. content on a decline), response (an answer to a key that was not pending).",
	}, []string{"kind"})
	r.MustRegister(c)
	return c
}

// noteDropped counts what the guard left out of a retry's answers and
// logs the names (the guard cuts them short and lists at most 16), never
// a value.
func (p *Proxy) noteDropped(m *mcphttp.Message, d host.DroppedAnswers) {
	if !d.Any() {
		return
	}
	p.up.dropped.WithLabelValues("field").Add(float64(d.Fields))
	p.up.dropped.WithLabelValues("member").Add(float64(d.Members))
	p.up.dropped.WithLabelValues("response").Add(float64(d.Responses))
	p.log.Info("left out of the answers what was not asked or checked; the upstream never gets it",
		"method", m.Method, "fields", d.Fields, "members", d.Members, "responses", d.Responses, "names", strings.Join(d.Names, " "))
}
