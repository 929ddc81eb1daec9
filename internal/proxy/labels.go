package proxy

import (
	"context"
	"net/http"
	"sync"
	"unicode/utf8"

	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
)

// Every label value on /metrics comes from a closed set, never from the
// client: a registry keeps each series it ever saw, so one client-chosen
// name per request would grow /metrics (and memory) without bound. The
// labels of the proxy's metrics:
//
//   - tool (mrtr_asks_total, mrtr_outcomes_total, mrtr_effects_total): a
//     tools/call's name only when the upstream lists it (its tools/list,
//     as the proxy caches it for the principal), else "other";
//     prompts/get is "prompt" and resources/read "resource" (the proxy
//     keeps no list of either, and a URI is the client's);
//   - outcome, result, what, op: constants in this package and
//     internal/server, or an upstream.Error code (constants);
//   - reason (mrtr_rejected_states_total): the guard core's Reason*
//     constants, cut by labelValue all the same.
const (
	labelOther    = "other"
	labelPrompt   = "prompt"
	labelResource = "resource"
	// maxLabel caps a label value even from the closed set: an upstream
	// may list a tool with a 20 KB name.
	maxLabel = 128
)

// labelValue is v when it is short, valid UTF-8 (the registry panics on
// anything else), else "other".
func labelValue(v string) string {
	if v == "" || len(v) > maxLabel || !utf8.ValidString(v) {
		return labelOther
	}
	return v
}

type labelKey struct{}

// lazyLabel is the tool label of one request, worked out when a metric
// first needs it: a call that counts nothing costs no tools/list lookup.
type lazyLabel struct {
	once      sync.Once
	v         string
	p         *Proxy
	ctx       context.Context
	m         *mcphttp.Message
	h         http.Header
	principal string
}

// withTargetLabel gives ctx the tool label of m (see targetLabel).
func (p *Proxy) withTargetLabel(ctx context.Context, m *mcphttp.Message, h http.Header, principal string) context.Context {
	l := &lazyLabel{p: p, ctx: ctx, m: m, h: h, principal: principal}
	return context.WithValue(ctx, labelKey{}, l)
}

func (l *lazyLabel) get() string {
	l.once.Do(func() {
		l.v = labelOther
		switch l.m.Method {
		case "prompts/get":
			l.v = labelPrompt
		case "resources/read":
			l.v = labelResource
		case "tools/call":
			name := labelValue(l.m.Target())
			if name == labelOther {
				return
			}
			// The list as this principal sees it; cached, as the
			// Mcp-Param-* check of this same call has just read it.
			if e := l.p.toolList(l.ctx, l.h, l.principal); e.err == nil && e.v.names[name] {
				l.v = name
			}
		}
	})
	return l.v
}

// targetLabel is the tool label withTargetLabel put on ctx ("other"
// without one).
func targetLabel(ctx context.Context) string {
	if l, ok := ctx.Value(labelKey{}).(*lazyLabel); ok {
		return l.get()
	}
	return labelOther
}
