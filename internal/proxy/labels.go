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

// withTargetLabel gives ctx the tool label of m (targetLabel), worked out
// when a metric first needs it: a call that counts nothing costs no
// tools/list lookup.
func (p *Proxy) withTargetLabel(ctx context.Context, m *mcphttp.Message, h http.Header, principal string) context.Context {
	return context.WithValue(ctx, labelKey{}, sync.OnceValue(func() string {
		switch m.Method {
		case "prompts/get":
			return labelPrompt
		case "resources/read":
			return labelResource
		case "tools/call":
			name := labelValue(m.Target())
			if name == labelOther {
				return labelOther
			}
			// The list as this principal sees it; cached, as the
			// Mcp-Param-* check of this same call has just read it.
			if e := p.toolList(ctx, h, principal); e.err == nil && e.v.names[name] {
				return name
			}
		}
		return labelOther
	}))
}

// targetLabel is the tool label withTargetLabel put on ctx ("other"
// without one).
func targetLabel(ctx context.Context) string {
	if f, ok := ctx.Value(labelKey{}).(func() string); ok {
		return f()
	}
	return labelOther
}
