package mcphttp

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
// The same _meta check wraps serve's stdio transport (internal/server).

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// ProtocolVersion is the only MCP revision served by serve and proxy.
const ProtocolVersion = "2026-07-28"

// MaxBody bounds every request body on /mcp.
const MaxBody = 1 << 20

// Spec error codes used here.
const (
	CodeHeaderMismatch             = -32020
	CodeUnsupportedProtocolVersion = -32022
)

const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

// probe is the part of a JSON-RPC message the checks read.
type probe struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params *struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
}

// CheckMeta returns the -32602 error for a request without the required
// _meta, or nil. Notifications and initialize pass.
func CheckMeta(method string, isCall bool, meta map[string]json.RawMessage) *jsonrpc.Error {
	if !isCall || method == "initialize" {
		return nil
	}
	v, ok := meta[MetaProtocolVersion]
	var s string
	if !ok || json.Unmarshal(v, &s) != nil || s == "" {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `missing required _meta field "` + MetaProtocolVersion + `"`}
	}
	c, ok := meta[MetaClientCapabilities]
	if !ok || len(bytes.TrimSpace(c)) == 0 || bytes.TrimSpace(c)[0] != '{' {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `missing required _meta field "` + MetaClientCapabilities + `" (an object)`}
	}
	return nil
}

// DecodeHeader decodes the =?base64?…?= form; ok is false when it is
// malformed.
func DecodeHeader(v string) (string, bool) {
	inner, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, true
	}
	inner, ok = strings.CutSuffix(inner, "?=")
	if !ok {
		return v, true // no suffix: a literal value, as the SDK reads it
	}
	b, err := base64.StdEncoding.DecodeString(inner)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// WriteRPCError writes a JSON-RPC error response (id null when unknown).
func WriteRPCError(w http.ResponseWriter, status int, id json.RawMessage, e *jsonrpc.Error) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}{"2.0", id, e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// CheckRequests wraps an MCP HTTP handler with the checks above and
// the 1 MiB body limit (HTTP 413 beyond it).
func CheckRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				http.Error(w, "request body exceeds 1 MiB", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "failed to read the body", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		// Every error below answers with the request's id (SEP-2575).
		var p probe
		parsed := false
		if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '{' && json.Unmarshal(body, &p) == nil {
			parsed = true
		}
		if v := r.Header.Get("MCP-Protocol-Version"); v != "" && v != ProtocolVersion {
			data, _ := json.Marshal(map[string]any{"supported": []string{ProtocolVersion}, "requested": v})
			WriteRPCError(w, http.StatusBadRequest, p.ID, &jsonrpc.Error{Code: CodeUnsupportedProtocolVersion,
				Message: "unsupported protocol version: this server speaks " + ProtocolVersion, Data: data})
			return
		}
		for _, h := range []string{"Mcp-Name", "Mcp-Method"} {
			if v := r.Header.Get(h); v != "" {
				d, ok := DecodeHeader(v)
				if !ok {
					WriteRPCError(w, http.StatusBadRequest, p.ID, &jsonrpc.Error{Code: CodeHeaderMismatch, Message: "malformed base64 value in the " + h + " header"})
					return
				}
				r.Header.Set(h, d)
			}
		}
		if parsed {
			var meta map[string]json.RawMessage
			if p.Params != nil {
				meta = p.Params.Meta
			}
			isCall := len(p.ID) > 0 && string(p.ID) != "null"
			if e := CheckMeta(p.Method, isCall, meta); e != nil {
				WriteRPCError(w, http.StatusBadRequest, p.ID, e)
				return
			}
		}
		// Anything else (batches, bad JSON) is the SDK's to refuse.
		next.ServeHTTP(w, r)
	})
}
