package server

// serve's use of the shared checks (internal/mcphttp): the HTTP wrapper,
// and the _meta check around the stdio transport.

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
)

// Spec error codes.
const (
	CodeHeaderMismatch             = mcphttp.CodeHeaderMismatch
	CodeUnsupportedProtocolVersion = mcphttp.CodeUnsupportedProtocolVersion
)

// CheckRequests wraps the SDK's HTTP handler with the shared checks
// (mcphttp.CheckRequests).
func CheckRequests(next http.Handler) http.Handler { return mcphttp.CheckRequests(next) }

// CheckStdio wraps a transport (stdio) with the _meta check: a request
// without it is answered -32602 and never reaches the server.
func CheckStdio(t mcp.Transport) mcp.Transport { return &checkedTransport{t} }

type checkedTransport struct{ mcp.Transport }

func (t *checkedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &checkedConn{c}, nil
}

type checkedConn struct{ mcp.Connection }

func (c *checkedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return nil, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return msg, nil
		}
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		_ = json.Unmarshal(req.Params, &p)
		e := mcphttp.CheckMeta(req.Method, req.IsCall(), p.Meta)
		if e == nil {
			return msg, nil
		}
		if err := c.Connection.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: e}); err != nil {
			return nil, err
		}
	}
}
