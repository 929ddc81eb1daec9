package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
	"github.com/mrtr-wasm/mrtr-wasm/internal/rawjson"
	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

// maxPrivateCached bounds the principals whose own tools/list (or
// server/discover) the proxy keeps at once.
const maxPrivateCached = 1024

var xMCPHeader = []byte(`"x-mcp-header"`)

// toolList is the upstream's tools/list as one principal may see it: the
// x-mcp-header annotations for the Mcp-Param-* header checks, and the
// definitions for legacy sessions, and the names listed: the only tool
// names that become metric labels (labels.go).
type toolList struct {
	params map[string][]mcphttp.ParamHeader
	tools  []json.RawMessage
	names  map[string]bool
}

// toolList returns the upstream's tools for principal, cached as the
// upstream's cacheScope and ttlMs allow. h are the headers of principal's
// request as they go upstream (upstreamHeaders).
func (p *Proxy) toolList(ctx context.Context, h http.Header, principal string) *cached[toolList] {
	return p.tools.get(ctx, cacheKey(principal, h), func(ctx context.Context) (toolList, cacheHint, error) {
		l, hint, err := p.fetchTools(ctx, h, principal)
		if err != nil {
			// Without the list no Mcp-Param-* header is declared, so none
			// reaches the upstream (declaredParamsOnly) until failBackoff
			// has passed.
			p.log.Warn("could not read the upstream's tools/list", "error", errText(err))
		}
		return l, hint, err
	})
}

// paramHeaders returns the x-mcp-header parameters of tool as principal
// sees it.
func (p *Proxy) paramHeaders(ctx context.Context, h http.Header, principal, tool string) []mcphttp.ParamHeader {
	return p.toolList(ctx, h, principal).v.params[tool]
}

// fetchHeaders are the headers for a request the proxy makes itself on
// behalf of a client's request, from that request's upstream headers h:
// the principal's identity as the proxy forwards it, and nothing of the
// client's call.
func fetchHeaders(h http.Header, method string) http.Header {
	out := make(http.Header, len(h)+2)
	for k, v := range h {
		if k != "Mcp-Name" && !strings.HasPrefix(k, "Mcp-Param-") {
			out[k] = v
		}
	}
	out["Mcp-Method"] = []string{method}
	out["Mcp-Protocol-Version"] = []string{mcphttp.ProtocolVersion}
	return out
}

// fetchTools reads every page of the upstream's tools/list as principal.
func (p *Proxy) fetchTools(ctx context.Context, h http.Header, principal string) (toolList, cacheHint, error) {
	out := toolList{params: map[string][]mcphttp.ParamHeader{}, names: map[string]bool{}}
	ctx = upstream.WithPrincipal(ctx, principal)
	h = fetchHeaders(h, "tools/list")
	var hint cacheHint
	cursor := ""
	for page := 0; page < 20; page++ {
		params := `{"_meta":{"` + mcphttp.MetaProtocolVersion + `":"` + mcphttp.ProtocolVersion + `","` + mcphttp.MetaClientCapabilities + `":{}}`
		if cursor != "" {
			cb, _ := json.Marshal(cursor)
			params += `,"cursor":` + string(cb)
		}
		params += "}"
		msg := `{"jsonrpc":"2.0","id":"mrtr-proxy-tools-` + strconv.Itoa(page) + `","method":"tools/list","params":` + params + `}`
		cctx, cancel := context.WithTimeout(ctx, p.cfg.FetchTimeout)
		resp, err := p.cfg.Upstream.Call(cctx, []byte(msg), h, nil)
		cancel()
		if err != nil {
			return toolList{}, cacheHint{}, err
		}
		var r struct {
			Result *struct {
				Tools      []json.RawMessage `json:"tools"`
				NextCursor string            `json:"nextCursor"`
				TTLMs      *int64            `json:"ttlMs"`
				CacheScope string            `json:"cacheScope"`
			} `json:"result"`
		}
		if err := json.Unmarshal(resp, &r); err != nil {
			return toolList{}, cacheHint{}, upstream.Errorf(upstream.CodeBadResponse, "the upstream's tools/list is not JSON-RPC", err)
		}
		if r.Result == nil {
			return toolList{}, cacheHint{}, upstream.Errorf(upstream.CodeBadResponse, "the upstream answered tools/list with an error", nil)
		}
		for _, raw := range r.Result.Tools {
			out.tools = append(out.tools, raw)
			if v, ok := rawjson.Get(raw, "name"); ok {
				if name, ok := rawjson.String(v); ok {
					out.names[name] = true
				}
			}
			if !bytes.Contains(raw, xMCPHeader) {
				// Most tools mirror nothing: their schemas are not walked
				// (with ttlMs 0 this runs for every tools/call).
				continue
			}
			var t struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			}
			if json.Unmarshal(raw, &t) != nil || t.Name == "" {
				continue
			}
			if ph := mcphttp.ParamHeadersOf(t.InputSchema); len(ph) > 0 {
				out.params[t.Name] = ph
			}
		}
		if ph := hintOf(r.Result.CacheScope, r.Result.TTLMs); page == 0 {
			hint = ph
		} else {
			hint = hint.and(ph)
		}
		if r.Result.NextCursor == "" {
			break
		}
		cursor = r.Result.NextCursor
	}
	return out, hint, nil
}
