package server

// The gaps this file fills in go-sdk v1.8.0, for a server that speaks only
// MCP 2026-07-28 (everything else is the SDK's):
//
//  1. A request with no _meta protocolVersion and no MCP-Protocol-Version
//     header is served by the SDK as a legacy (2025) request, with
//     capabilities made up for it. Here every request (not notification)
//     must carry _meta["io.modelcontextprotocol/protocolVersion"] and
//     _meta["io.modelcontextprotocol/clientCapabilities"] (an object);
//     without them: JSON-RPC -32602, HTTP 400 (spec basic/index.mdx).
//     `initialize` is left to the SDK, which answers it with a version
//     the legacy client will refuse.
//  2. A MCP-Protocol-Version header naming an older revision gets a
//     plain-text 400 from the SDK; here it is the spec's JSON-RPC -32022
//     (UnsupportedProtocolVersion) with data.supported and data.requested.
//  3. The SDK compares Mcp-Name and Mcp-Method with the body as sent; a
//     value in the =?base64?…?= form (how a non-ASCII tool name or
//     resource URI travels) is decoded here first, and a malformed one is
//     HTTP 400 with -32020 (HeaderMismatch).
//
// The same _meta check wraps the stdio transport.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/internal/identity"
	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
)

// CheckRequests wraps the SDK's HTTP handler with the checks above and
// the 1 MiB body limit (HTTP 413 beyond it). The body is read first, so
// that every JSON-RPC error written here carries the request's id, and in
// the same pass the raw params are filed for HostRequest (raw.go).
func CheckRequests(next http.Handler, streams *mcphttp.Streams) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := mcphttp.ReadBody(w, r, mcphttp.MaxBody)
		if err != nil {
			mcphttp.WriteBodyError(w, err, mcphttp.MaxBody)
			return
		}
		msg, isObject, err := scanMessage(body)
		if err != nil {
			mcphttp.WriteRPCError(w, http.StatusBadRequest, msg.id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()})
			return
		}
		if v := r.Header.Get("MCP-Protocol-Version"); v != "" && v != mcphttp.ProtocolVersion {
			data, _ := json.Marshal(map[string]any{"supported": []string{mcphttp.ProtocolVersion}, "requested": v})
			mcphttp.WriteRPCError(w, http.StatusBadRequest, msg.id, &jsonrpc.Error{Code: mcphttp.CodeUnsupportedProtocolVersion,
				Message: "unsupported protocol version: this server speaks " + mcphttp.ProtocolVersion, Data: data})
			return
		}
		if e := mcphttp.CheckRepeatedHeaders(r.Header); e != nil {
			mcphttp.WriteRPCError(w, http.StatusBadRequest, msg.id, e)
			return
		}
		for _, h := range []string{"Mcp-Name", "Mcp-Method"} {
			if v := r.Header.Get(h); v != "" {
				d, ok := mcphttp.DecodeHeader(v)
				if !ok {
					mcphttp.WriteRPCError(w, http.StatusBadRequest, msg.id, &jsonrpc.Error{Code: mcphttp.CodeHeaderMismatch, Message: "malformed base64 value in the " + h + " header"})
					return
				}
				r.Header.Set(h, d)
			}
		}
		if isObject {
			rc, err := msg.call, msg.paramsErr
			isCall := len(msg.id) > 0 && string(msg.id) != "null"
			switch {
			case errors.Is(err, errAmbiguous):
				mcphttp.WriteRPCError(w, http.StatusBadRequest, msg.id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()})
				return
			case err != nil: // params not an object: the SDK's to refuse
			default:
				if e := mcphttp.CheckMeta(msg.method, isCall, rc.meta); e != nil {
					mcphttp.WriteRPCError(w, http.StatusBadRequest, msg.id, e)
					return
				}
				defer fileHTTP(r.Header, rc)()
			}
			if msg.method == "subscriptions/listen" && isCall && streams != nil {
				release, ok := streams.Acquire(identity.RequestPrincipal(r))
				if !ok {
					mcphttp.WriteBusy(w, msg.id)
					return
				}
				defer release()
			}
		}
		// Anything else (batches, bad JSON) is the SDK's to refuse.
		next.ServeHTTP(w, r)
	})
}

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
		rc, err := scanParams(req.Params)
		var e *jsonrpc.Error
		switch {
		case errors.Is(err, errAmbiguous):
			e = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		case err != nil:
			rc = &rawCall{} // not an object: the SDK refuses it
			fallthrough
		default:
			e = mcphttp.CheckMeta(req.Method, req.IsCall(), rc.meta)
		}
		if e == nil {
			fileStdio(req, rc)
			return msg, nil
		}
		if !req.IsCall() {
			continue // a notification gets no answer
		}
		if err := c.Connection.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: e}); err != nil {
			return nil, err
		}
	}
}
