package proxy

// server/discover is the proxy's own answer, built from what the upstream
// says of itself (its DiscoverResult, or a 2025 upstream's initialize
// result): the clients talk to the proxy, whose versions and carriable
// capabilities differ from the upstream's.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/legacy"
	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

const (
	metaServerInfo = "io.modelcontextprotocol/serverInfo"
	// metaProxy names the proxy in the DiscoverResult's _meta.
	metaProxy = "mrtr-wasm/proxy"
	// legacyDiscoverTTL: a 2025 upstream's initialize result is read once
	// per start, for everybody (it is public), and changes only when the
	// upstream restarts.
	legacyDiscoverTTL = time.Minute
)

// discoverer is an upstream that knows what it answered at start-up.
type discoverer interface {
	Discovery() (result json.RawMessage, legacy bool)
}

// legacyUpstream reports whether the upstream speaks an earlier revision.
func (p *Proxy) legacyUpstream() bool {
	d, ok := p.cfg.Upstream.(discoverer)
	if !ok {
		return false
	}
	_, legacy := d.Discovery()
	return legacy
}

// discover answers server/discover for principal (h: the request's
// upstream headers). A 2026-07-28 upstream's own DiscoverResult is
// fetched as principal and cached as its cacheScope and ttlMs allow; the
// answer carries the same scope and what is left of the ttl.
func (p *Proxy) discover(ctx context.Context, m *mcphttp.Message, h http.Header, principal string) []byte {
	if d, ok := p.cfg.Upstream.(discoverer); ok {
		if init, legacy := d.Discovery(); legacy {
			return rpcResult(m.ID, p.discoverResult(init, true, cacheHint{public: true, ttl: legacyDiscoverTTL}, legacyDiscoverTTL))
		}
	}
	e := p.discovery.get(ctx, cacheKey(principal, h), func(ctx context.Context) (json.RawMessage, cacheHint, error) {
		return p.fetchDiscover(ctx, h, principal)
	})
	if e.err != nil {
		if re, ok := e.err.(*upstreamRPCError); ok {
			return withID(re.raw, m.ID)
		}
		return p.upstreamError(m, e.err)
	}
	return rpcResult(m.ID, p.discoverResult(e.v, false, e.hint, e.ttlLeft(time.Now())))
}

// upstreamRPCError is the upstream's JSON-RPC error answer to a request
// the proxy made itself; the client gets it as the upstream said it.
type upstreamRPCError struct{ raw []byte }

func (*upstreamRPCError) Error() string { return "the upstream answered with a JSON-RPC error" }

// fetchDiscover asks the upstream for its DiscoverResult as principal.
func (p *Proxy) fetchDiscover(ctx context.Context, h http.Header, principal string) (json.RawMessage, cacheHint, error) {
	msg := []byte(`{"jsonrpc":"2.0","id":"mrtr-proxy-discover","method":"server/discover","params":{"_meta":{"` +
		mcphttp.MetaProtocolVersion + `":"` + mcphttp.ProtocolVersion + `","` + mcphttp.MetaClientCapabilities + `":{}}}}`)
	ctx, cancel := context.WithTimeout(upstream.WithPrincipal(ctx, principal), p.cfg.FetchTimeout)
	defer cancel()
	resp, err := p.cfg.Upstream.Call(ctx, msg, fetchHeaders(h, "server/discover"), nil)
	if err != nil {
		return nil, cacheHint{}, err
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		return nil, cacheHint{}, upstream.Errorf(upstream.CodeBadResponse, "the upstream's server/discover answer is not JSON-RPC", err)
	}
	if len(r.Error) > 0 || !isObject(r.Result) {
		return nil, cacheHint{}, &upstreamRPCError{raw: resp}
	}
	var c struct {
		TTLMs      *int64 `json:"ttlMs"`
		CacheScope string `json:"cacheScope"`
	}
	_ = json.Unmarshal(r.Result, &c)
	return r.Result, hintOf(c.CacheScope, c.TTLMs), nil
}

// discoverResult builds the proxy's DiscoverResult from up, the
// upstream's DiscoverResult (or, legacy, its 2025 InitializeResult); the
// answer may be cached as hint says for ttl from now.
//
//   - supportedVersions are the proxy's, not the upstream's: 2026-07-28
//     statelessly, and the 2025 revisions on sessions (internal/legacy),
//     whatever the upstream speaks.
//   - capabilities are the upstream's that the proxy can carry
//     (carriedCapabilities).
//   - instructions and the upstream's other _meta pass as they are.
//   - serverInfo (_meta "io.modelcontextprotocol/serverInfo") stays the
//     upstream's, and the proxy names itself beside it under
//     "mrtr-wasm/proxy". The spec makes serverInfo self-reported and for
//     display, logging and debugging only; the server a client shows its
//     user is the one its operator put behind the proxy, and every result
//     the proxy relays carries the upstream's serverInfo too, so one
//     identity across discover and calls, with the proxy in its own key
//     for whoever debugs. With no serverInfo from the upstream, the
//     proxy's own stands in.
func (p *Proxy) discoverResult(up json.RawMessage, legacyUp bool, hint cacheHint, ttl time.Duration) json.RawMessage {
	var u struct {
		Capabilities    map[string]json.RawMessage `json:"capabilities"`
		Instructions    string                     `json:"instructions"`
		ServerInfo      json.RawMessage            `json:"serverInfo"`
		ProtocolVersion string                     `json:"protocolVersion"`
		Meta            map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(up, &u)
	proxyInfo := map[string]string{"name": "mrtr-wasm-proxy", "version": p.cfg.Version, "upstreamProtocolVersion": mcphttp.ProtocolVersion}
	if legacyUp && u.ProtocolVersion != "" {
		proxyInfo["upstreamProtocolVersion"] = u.ProtocolVersion
	}
	meta := make(map[string]json.RawMessage, len(u.Meta)+2)
	for k, v := range u.Meta {
		meta[k] = v
	}
	info := meta[metaServerInfo]
	if !isObject(info) {
		// A 2025 InitializeResult, or a DiscoverResult from before the
		// spec moved serverInfo into _meta.
		info = u.ServerInfo
	}
	if !isObject(info) {
		info, _ = json.Marshal(map[string]string{"name": proxyInfo["name"], "version": proxyInfo["version"]})
	}
	meta[metaServerInfo] = info
	meta[metaProxy], _ = json.Marshal(proxyInfo)
	b, _ := json.Marshal(struct {
		ResultType        string                     `json:"resultType"`
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      map[string]json.RawMessage `json:"capabilities"`
		Instructions      string                     `json:"instructions,omitempty"`
		CacheScope        string                     `json:"cacheScope"`
		TTLMs             int64                      `json:"ttlMs"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}{
		ResultType:        "complete",
		SupportedVersions: append([]string{mcphttp.ProtocolVersion}, legacy.ProtocolVersions...),
		Capabilities:      carriedCapabilities(u.Capabilities, legacyUp),
		Instructions:      u.Instructions,
		CacheScope:        hint.scope(),
		TTLMs:             ttl.Milliseconds(),
		Meta:              meta,
	})
	return b
}

// carriedCapabilities are the upstream's capabilities the proxy can carry
// to its clients. Never: the tasks extension, nor the 2025 tasks slot (a
// task asks for input with tasks/get and takes the answers with
// tasks/update, around the guard). From a 2025 upstream, also not:
// logging (its level is set per session, so a 2026-07-28 client's
// per-request logLevel cannot be honoured) and listChanged / subscribe
// (the proxy has no subscriptions/listen for a 2025 session's
// notifications). Everything else, experimental and other extensions
// included, is relayed as it is and stays.
func carriedCapabilities(caps map[string]json.RawMessage, legacyUp bool) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(caps))
	for k, v := range caps {
		switch {
		case k == "tasks" || !isObject(v):
		case k == "extensions":
			if v = without(v, "io.modelcontextprotocol/tasks"); !bytes.Equal(v, []byte("{}")) {
				out[k] = v
			}
		case legacyUp && k == "logging":
		case legacyUp && (k == "tools" || k == "prompts" || k == "resources"):
			out[k] = without(v, "listChanged", "subscribe")
		default:
			out[k] = v
		}
	}
	return out
}

// without returns the JSON object obj without keys.
func without(obj json.RawMessage, keys ...string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return json.RawMessage("{}")
	}
	for _, k := range keys {
		delete(m, k)
	}
	b, _ := json.Marshal(m)
	return b
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 1 && raw[0] == '{'
}
