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
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// ProtocolVersion is the only MCP revision served by serve and proxy, and
// the one the proxy offers an upstream first (the one place it is named).
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

// ErrorResponse is a JSON-RPC error response with the raw id (null when
// unknown).
func ErrorResponse(id json.RawMessage, e *jsonrpc.Error) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}{"2.0", id, e})
	return body
}

// CheckRepeatedHeaders refuses a request that repeats an MCP header: it
// is read with Get (the first value), and an intermediary that routes on
// another would see another request.
func CheckRepeatedHeaders(h http.Header) *jsonrpc.Error {
	for _, k := range []string{"Mcp-Name", "Mcp-Method", "MCP-Protocol-Version"} {
		if len(h.Values(k)) > 1 {
			return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: "the " + k + " header is repeated"}
		}
	}
	return nil
}

// WriteRPCError writes a JSON-RPC error response (id null when unknown).
func WriteRPCError(w http.ResponseWriter, status int, id json.RawMessage, e *jsonrpc.Error) {
	body := ErrorResponse(id, e)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Check applies the checks above to one POST: the 1 MiB body limit (HTTP
// 413 beyond it), the protocol version header, the =?base64?…?= header
// form (Mcp-Name and Mcp-Method are decoded in place) and the required
// _meta. On a failure it answers (ok false). Otherwise it returns the body
// (r.Body is replaced by a reader of it) and the message parsed once, or
// the parse error (ParseMessage: with a Message holding only the id when
// the id is known) for bytes that are not one acceptable JSON-RPC message.
func Check(w http.ResponseWriter, r *http.Request) (body []byte, m *Message, perr *jsonrpc.Error, ok bool) {
	body, err := ReadBody(w, r, MaxBody)
	if err != nil {
		WriteBodyError(w, err, MaxBody)
		return nil, nil, nil, false
	}
	m, perr = ParseMessage(body)
	// Every error below answers with the request's id (SEP-2575).
	var id json.RawMessage
	if m != nil {
		id = m.ID
	}
	if v := r.Header.Get("MCP-Protocol-Version"); v != "" && v != ProtocolVersion {
		data, _ := json.Marshal(map[string]any{"supported": []string{ProtocolVersion}, "requested": v})
		WriteRPCError(w, http.StatusBadRequest, id, &jsonrpc.Error{Code: CodeUnsupportedProtocolVersion,
			Message: "unsupported protocol version: this server speaks " + ProtocolVersion, Data: data})
		return nil, nil, nil, false
	}
	if e := CheckRepeatedHeaders(r.Header); e != nil {
		WriteRPCError(w, http.StatusBadRequest, id, e)
		return nil, nil, nil, false
	}
	for _, h := range []string{"Mcp-Name", "Mcp-Method"} {
		if v := r.Header.Get(h); v != "" {
			d, ok := DecodeHeader(v)
			if !ok {
				WriteRPCError(w, http.StatusBadRequest, id, &jsonrpc.Error{Code: CodeHeaderMismatch, Message: "malformed base64 value in the " + h + " header"})
				return nil, nil, nil, false
			}
			r.Header.Set(h, d)
		}
	}
	if m != nil && perr == nil {
		if e := CheckMeta(m.Method, m.IsCall(), m.p.Meta); e != nil {
			WriteRPCError(w, http.StatusBadRequest, id, e)
			return nil, nil, nil, false
		}
	}
	return body, m, perr, true
}
