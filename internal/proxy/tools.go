package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
)

// toolCache keeps the x-mcp-header annotations of the upstream's tools,
// from its tools/list, for the Mcp-Param-* header checks. It is refreshed
// when the upstream's ttlMs (or the default) runs out.
type toolCache struct {
	ttl    time.Duration
	mu     sync.Mutex
	params map[string][]mcphttp.ParamHeader
	exp    time.Time
	fetch  sync.Mutex
}

func (c *toolCache) paramHeaders(ctx context.Context, p *Proxy, tool string) []mcphttp.ParamHeader {
	c.mu.Lock()
	if time.Now().Before(c.exp) {
		ph := c.params[tool]
		c.mu.Unlock()
		return ph
	}
	c.mu.Unlock()
	c.fetch.Lock()
	defer c.fetch.Unlock()
	c.mu.Lock()
	if time.Now().Before(c.exp) {
		ph := c.params[tool]
		c.mu.Unlock()
		return ph
	}
	c.mu.Unlock()
	params, ttl, err := p.listTools(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		// Without the list, Mcp-Param-* headers go unchecked here (the
		// upstream still sees them); try again shortly.
		p.log.Warn("could not read the upstream's tools/list for the header checks", "error", errText(err))
		c.exp = time.Now().Add(5 * time.Second)
		return c.params[tool]
	}
	c.params, c.exp = params, time.Now().Add(ttl)
	return params[tool]
}

// listTools reads every page of the upstream's tools/list.
func (p *Proxy) listTools(ctx context.Context) (map[string][]mcphttp.ParamHeader, time.Duration, error) {
	out := map[string][]mcphttp.ParamHeader{}
	ttl := p.tools.ttl
	cursor := ""
	h := http.Header{"Mcp-Method": {"tools/list"}, "Mcp-Protocol-Version": {mcphttp.ProtocolVersion}}
	for page := 0; page < 20; page++ {
		params := `{"_meta":{"` + mcphttp.MetaProtocolVersion + `":"` + mcphttp.ProtocolVersion + `","` + mcphttp.MetaClientCapabilities + `":{}}`
		if cursor != "" {
			cb, _ := json.Marshal(cursor)
			params += `,"cursor":` + string(cb)
		}
		params += "}"
		msg := `{"jsonrpc":"2.0","id":"mrtr-proxy-tools-` + strconv.Itoa(page) + `","method":"tools/list","params":` + params + `}`
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := p.cfg.Upstream.Call(ctx, []byte(msg), h, nil)
		cancel()
		if err != nil {
			return nil, 0, err
		}
		var r struct {
			Result struct {
				Tools []struct {
					Name        string          `json:"name"`
					InputSchema json.RawMessage `json:"inputSchema"`
				} `json:"tools"`
				NextCursor string `json:"nextCursor"`
				TTLMs      *int64 `json:"ttlMs"`
			} `json:"result"`
		}
		if err := json.Unmarshal(resp, &r); err != nil {
			return nil, 0, err
		}
		for _, t := range r.Result.Tools {
			if ph := mcphttp.ParamHeadersOf(t.InputSchema); len(ph) > 0 {
				out[t.Name] = ph
			}
		}
		if r.Result.TTLMs != nil && *r.Result.TTLMs >= 0 {
			// Re-reading the list on every call would double each call.
			ttl = max(min(ttl, time.Duration(*r.Result.TTLMs)*time.Millisecond), time.Second)
		}
		if r.Result.NextCursor == "" {
			break
		}
		cursor = r.Result.NextCursor
	}
	return out, ttl, nil
}
