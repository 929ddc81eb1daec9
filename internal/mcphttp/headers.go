package mcphttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mrtr-wasm/mrtr-wasm/internal/rawjson"
)

// Message is what the checks read of one JSON-RPC message, parsed once:
// the id, the method, and of the params the name or URI, the raw
// arguments and inputResponses, the requestState and the _meta.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	p       params
}

type params struct {
	Name           string                     `json:"name"`
	URI            string                     `json:"uri"`
	Arguments      json.RawMessage            `json:"arguments"`
	RequestState   *string                    `json:"requestState"`
	InputResponses json.RawMessage            `json:"inputResponses"`
	Meta           map[string]json.RawMessage `json:"_meta"`
}

// wire is a Message as it is decoded.
type wire struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  *params         `json:"params"`
}

func (m *Message) set(w *wire) {
	m.JSONRPC, m.ID, m.Method = w.JSONRPC, w.ID, w.Method
	if w.Params != nil {
		m.p = *w.Params
	}
}

// UnmarshalJSON reads the message and its params in one pass.
func (m *Message) UnmarshalJSON(b []byte) error {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	m.set(&w)
	return nil
}

// ParseMessage reads one JSON-RPC request or notification. A batch, a
// response or bytes that are not a JSON object are a JSON-RPC error. A
// message refused for its member names comes with the error and a
// Message that holds only its ID, for the error response.
func ParseMessage(body []byte) (*Message, *jsonrpc.Error) {
	t := bytes.TrimSpace(body)
	if len(t) == 0 || t[0] != '{' {
		if len(t) > 0 && t[0] == '[' {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "batches are not supported in " + ProtocolVersion}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "the body is not a JSON-RPC message"}
	}
	if !json.Valid(t) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "the body is not valid JSON"}
	}
	if m, ok := parseExact(t); ok {
		return m, nil
	}
	return parseWire(t)
}

// parseWire is ParseMessage through encoding/json, which matches member
// names in any case: the reading that decides every message parseExact
// does not take, and so every refusal and its precedence (invalid JSON,
// then a member of the wrong type, then the request's shape, then the
// member names).
func parseWire(t []byte) (*Message, *jsonrpc.Error) {
	// Decoded as a wire, not through UnmarshalJSON: encoding/json would
	// check the whole body once more before calling it.
	var w wire
	if err := json.Unmarshal(t, &w); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params must be an object with the fields of the method"}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "the body is not valid JSON"}
	}
	if w.JSONRPC != "2.0" || w.Method == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: `not a JSON-RPC 2.0 request: "jsonrpc":"2.0" and a "method" are required`}
	}
	if e := checkMemberNames(t); e != nil {
		return &Message{ID: w.ID}, e // the id, for the error response
	}
	m := &Message{}
	m.set(&w)
	return m, nil
}

// parseExact reads a well-formed request, valid JSON, in one pass over
// its members, and says false for anything parseWire might read
// otherwise or refuse: a repeated member or names that fold together, a member
// of the wrong type, a string that is not UTF-8 as written, jsonrpc other
// than "2.0", no method. What it takes, it reads as parseWire would
// (FuzzParseMessageExact holds it to that). Values are copied, as
// encoding/json copies them: a caller may reuse its buffer.
func parseExact(t []byte) (*Message, bool) {
	ms, err := rawjson.Object(t)
	if err != nil || !namesApart(ms, messageMembers) {
		return nil, false
	}
	t = bytes.Clone(t) // one copy that every value below slices
	m := &Message{}
	for _, mb := range ms {
		v := t[mb.Start:mb.End]
		switch string(mb.Key) {
		case "jsonrpc":
			if string(v) != `"2.0"` {
				return nil, false
			}
			m.JSONRPC = "2.0"
		case "id":
			m.ID = v
		case "method":
			s, ok := exactString(v)
			if !ok || s == "" {
				return nil, false
			}
			m.Method = s
		case "params":
			if string(v) != "null" && !parseExactParams(v, &m.p) {
				return nil, false
			}
		}
	}
	return m, m.JSONRPC != "" && m.Method != ""
}

func parseExactParams(v []byte, p *params) bool {
	if v[0] != '{' {
		return false
	}
	ps, err := rawjson.Object(v)
	if err != nil || !namesApart(ps, paramsMembers) {
		return false
	}
	for _, mb := range ps {
		pv := v[mb.Start:mb.End]
		null := string(pv) == "null"
		switch string(mb.Key) {
		case "name", "uri":
			if null {
				continue
			}
			s, ok := exactString(pv)
			if !ok {
				return false
			}
			if mb.Key[0] == 'n' {
				p.Name = s
			} else {
				p.URI = s
			}
		case "arguments":
			p.Arguments = pv
		case "inputResponses":
			p.InputResponses = pv
		case "requestState":
			if null {
				continue
			}
			s, ok := exactString(pv)
			if !ok {
				return false
			}
			p.RequestState = &s
		case "_meta":
			if null {
				continue
			}
			if pv[0] != '{' {
				return false
			}
			meta, err := rawjson.Object(pv)
			if err != nil {
				return false // a repeated key: encoding/json keeps the last
			}
			p.Meta = make(map[string]json.RawMessage, len(meta))
			for _, e := range meta {
				if !utf8.Valid(e.Key) {
					return false
				}
				p.Meta[string(e.Key)] = pv[e.Start:e.End]
			}
		}
	}
	return true
}

// namesApart is memberNameError's test without its allocations, for
// members whose names are ASCII (there, bytes.EqualFold is encoding/json's
// folding): no two names fold together, and none folds to one of names
// without being it. False also for what it leaves to memberNameError: a
// name that is not ASCII, or more members than it compares pairwise.
func namesApart(ms []rawjson.Member, names []string) bool {
	if len(ms) > 16 {
		return false
	}
	for i, m := range ms {
		for _, c := range m.Key {
			if c >= utf8.RuneSelf {
				return false
			}
		}
		for _, o := range ms[:i] {
			if bytes.EqualFold(m.Key, o.Key) {
				return false
			}
		}
		for _, n := range names {
			if len(m.Key) == len(n) && string(m.Key) != n && bytes.EqualFold(m.Key, []byte(n)) {
				return false
			}
		}
	}
	return true
}

// exactString decodes a JSON string as encoding/json does; false for
// another type, or for bytes that are not UTF-8 (encoding/json would
// replace them).
func exactString(v []byte) (string, bool) {
	s, ok := rawjson.String(v)
	if !ok || !utf8.ValidString(s) {
		return "", false
	}
	return s, true
}

// The members the checks read, in the message and in its params.
var (
	messageMembers = []string{"jsonrpc", "id", "method", "params"}
	paramsMembers  = []string{"name", "uri", "arguments", "requestState", "inputResponses", "_meta"}
	foldedNames    = func() map[string]string {
		m := map[string]string{}
		for _, n := range append(slices.Clone(messageMembers), paramsMembers...) {
			m[n] = rawjson.FoldName(n)
		}
		return m
	}()
)

// checkMemberNames refuses a message that repeats a member or has two
// names that differ only in case, in itself or in its params, and one
// that spells a member the checks read in another case ("REQUESTSTATE",
// "reque\u017ftState"). encoding/json matches names in any case and keeps
// the last, as a server decoding with it does (many Go MCP servers do);
// the guard core and most servers read exact names. Two readers that keep
// different members are how a forged requestState or another tool's name
// would reach the server past the checks. (serve's own scanner, which
// reads exact names, refuses the first two.)
func checkMemberNames(msg []byte) *jsonrpc.Error {
	ms, err := rawjson.Object(msg)
	if e := memberNameError(ms, err, messageMembers, jsonrpc.CodeInvalidRequest, "the message"); e != nil {
		return e
	}
	pm, ok := rawjson.Find(ms, "params")
	if !ok || msg[pm.Start] != '{' {
		return nil
	}
	ps, err := rawjson.Object(msg[pm.Start:pm.End])
	return memberNameError(ps, err, paramsMembers, jsonrpc.CodeInvalidParams, "params")
}

func memberNameError(ms []rawjson.Member, err error, names []string, code int64, what string) *jsonrpc.Error {
	if errors.Is(err, rawjson.ErrDupKey) {
		return &jsonrpc.Error{Code: code, Message: what + " repeats a member"}
	}
	seen := make(map[string]string, len(ms))
	for _, m := range ms {
		k := string(m.Key)
		f := rawjson.FoldName(k)
		if prev, dup := seen[f]; dup {
			return &jsonrpc.Error{Code: code, Message: what + " has members " + quoteName(prev) + " and " + quoteName(k) + ": names differ only in case"}
		}
		seen[f] = k
		for _, n := range names {
			if k != n && f == foldedNames[n] {
				return &jsonrpc.Error{Code: code, Message: what + " has a member " + quoteName(k) + ": the member is \"" + n + "\" (names are case-sensitive)"}
			}
		}
	}
	return nil
}

// quoteName quotes a member name for an error, cut to a sane length.
func quoteName(k string) string {
	if len(k) > 64 {
		k = k[:64] + "…"
	}
	return strconv.Quote(k)
}

// IsCall reports whether the message is a request (it has an id).
func (m *Message) IsCall() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// Target is the tool or prompt name, or the resource URI.
func (m *Message) Target() string {
	if m.Method == "resources/read" {
		return m.p.URI
	}
	return m.p.Name
}

// IsRetry reports whether the request carries a requestState.
func (m *Message) IsRetry() bool { return m.p.RequestState != nil && *m.p.RequestState != "" }

// RequestState is the request's requestState as the client sent it ("" if none).
func (m *Message) RequestState() string {
	if m.p.RequestState == nil {
		return ""
	}
	return *m.p.RequestState
}

// AnswersRound reports whether the request claims to answer an input
// round: it has a requestState (even "") or non-null inputResponses. A
// proxy must not forward such a request as a fresh call: to an upstream
// that asks without a requestState, or with "", it would be an answer no
// one checked.
func (m *Message) AnswersRound() bool {
	return m.p.RequestState != nil || (len(m.p.InputResponses) > 0 && string(m.p.InputResponses) != "null")
}

// InputResponses are the request's raw inputResponses (nil if none).
func (m *Message) InputResponses() json.RawMessage { return m.p.InputResponses }

// Meta is the request's _meta.
func (m *Message) Meta() map[string]json.RawMessage { return m.p.Meta }

// Arguments are the request's raw arguments.
func (m *Message) Arguments() json.RawMessage { return m.p.Arguments }

// CheckTransport applies the Streamable HTTP rules a POST must meet
// before its body is read: a loopback listener answers only loopback Host
// names (DNS rebinding), the body is JSON, and the client accepts both
// JSON and event streams. It returns the HTTP status and text to refuse
// with, or 0.
func CheckTransport(r *http.Request) (int, string) {
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil {
		if isLoopback(la.String()) && !isLoopback(r.Host) {
			return http.StatusForbidden, "Forbidden: invalid Host header " + strconv.Quote(r.Host)
		}
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		return http.StatusUnsupportedMediaType, "Content-Type must be 'application/json'"
	}
	jsonOK, streamOK := false, false
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := mime.ParseMediaType(strings.TrimSpace(part))
			switch mt {
			case "application/json", "application/*", "*/*":
				jsonOK = true
			}
			switch mt {
			case "text/event-stream", "text/*", "*/*":
				streamOK = true
			}
		}
	}
	if !jsonOK || !streamOK {
		return http.StatusBadRequest, "Accept must contain both 'application/json' and 'text/event-stream'"
	}
	return 0, ""
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// ParamHeader is one x-mcp-header annotation of a tool's input schema:
// the argument at Path travels also as the Mcp-Param-{Header} header.
type ParamHeader struct {
	Header string
	Path   []string
}

// ParamHeadersOf reads the x-mcp-header annotations of an input schema
// (properties, nested objects included).
func ParamHeadersOf(schema json.RawMessage) []ParamHeader {
	var out []ParamHeader
	var walk func(raw json.RawMessage, path []string, depth int)
	walk = func(raw json.RawMessage, path []string, depth int) {
		if depth > 8 {
			return
		}
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
			XMCPHeader *string                    `json:"x-mcp-header"`
		}
		if json.Unmarshal(raw, &s) != nil {
			return
		}
		if s.XMCPHeader != nil && *s.XMCPHeader != "" && len(path) > 0 {
			out = append(out, ParamHeader{Header: *s.XMCPHeader, Path: append([]string(nil), path...)})
		}
		for name, p := range s.Properties {
			walk(p, append(path, name), depth+1)
		}
	}
	walk(schema, nil, 0)
	return out
}

func headerMismatch(msg string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: "header mismatch: " + msg}
}

// CheckHeaders compares the HTTP headers with the body as 2026-07-28
// requires: MCP-Protocol-Version with the _meta version, Mcp-Method with
// the method, Mcp-Name with the name or URI, and each Mcp-Param-* header
// with its argument (params: the tool's annotations, nil when unknown).
// Header values in the =?base64?…?= form must already be decoded
// (Check does that for Mcp-Name and Mcp-Method).
func CheckHeaders(h http.Header, m *Message, params []ParamHeader) *jsonrpc.Error {
	if m.IsCall() {
		var metaVersion string
		if v, ok := m.p.Meta[MetaProtocolVersion]; ok {
			_ = json.Unmarshal(v, &metaVersion)
		}
		hv := h.Get("MCP-Protocol-Version")
		if hv == "" {
			return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: "MCP-Protocol-Version header is required for requests carrying " + strconv.Quote(MetaProtocolVersion)}
		}
		if hv != metaVersion {
			return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: "MCP-Protocol-Version header " + strconv.Quote(hv) + " does not match request " + MetaProtocolVersion + " " + strconv.Quote(metaVersion)}
		}
	}
	mh := h.Get("Mcp-Method")
	if mh == "" {
		return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: "missing required Mcp-Method header"}
	}
	if mh != m.Method {
		return headerMismatch("Mcp-Method header value " + strconv.Quote(mh) + " does not match body value " + strconv.Quote(m.Method))
	}
	switch m.Method {
	case "tools/call", "resources/read", "prompts/get":
		nh := h.Get("Mcp-Name")
		if nh == "" {
			return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: "missing required Mcp-Name header for method " + strconv.Quote(m.Method)}
		}
		if nh != m.Target() {
			return headerMismatch("Mcp-Name header value " + strconv.Quote(nh) + " does not match body value " + strconv.Quote(m.Target()))
		}
	}
	if m.Method != "tools/call" || len(params) == 0 {
		return nil
	}
	var args map[string]json.RawMessage
	_ = json.Unmarshal(m.p.Arguments, &args)
	for _, ph := range params {
		name := "Mcp-Param-" + ph.Header
		hv := h.Get(name)
		raw, ok, other := lookup(args, ph.Path)
		if other != "" {
			// A server decoding with encoding/json may take the other one.
			return headerMismatch("the arguments spell parameter " + strconv.Quote(strings.Join(ph.Path, ".")) + " also as " + quoteName(other) + ": names differ only in case")
		}
		if !ok || string(raw) == "null" {
			if hv != "" {
				return headerMismatch("unexpected " + name + " header for absent or null parameter " + strconv.Quote(strings.Join(ph.Path, ".")))
			}
			continue
		}
		if hv == "" {
			return headerMismatch("missing " + name + " header for parameter " + strconv.Quote(strings.Join(ph.Path, ".")))
		}
		dv, ok := DecodeHeader(hv)
		if !ok {
			return headerMismatch(name + " header contains invalid Base64 encoding")
		}
		if !primitiveEqual(dv, raw) {
			return headerMismatch(name + " header value does not match body value")
		}
	}
	return nil
}

// lookup finds the argument at path. other is a member on the way whose
// name equals the path's in another case: which of the two a server reads
// depends on its decoder.
func lookup(args map[string]json.RawMessage, path []string) (v json.RawMessage, ok bool, other string) {
	cur := args
	for i, k := range path {
		for kk := range cur {
			if kk != k && strings.EqualFold(kk, k) {
				return nil, false, kk
			}
		}
		if v, ok = cur[k]; !ok {
			return nil, false, ""
		}
		if i == len(path)-1 {
			return v, true, ""
		}
		cur = nil
		if json.Unmarshal(v, &cur) != nil {
			return nil, false, ""
		}
	}
	return nil, false, ""
}

// primitiveEqual compares a header's text with a JSON primitive: strings
// exactly, booleans as true/false, numbers by value.
func primitiveEqual(hv string, raw json.RawMessage) bool {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return false
	}
	switch x := v.(type) {
	case string:
		return hv == x
	case bool:
		return hv == strconv.FormatBool(x)
	case json.Number:
		b, err1 := strconv.ParseFloat(string(x), 64)
		h, err2 := strconv.ParseFloat(hv, 64)
		return err1 == nil && err2 == nil && !math.IsNaN(h) && !math.IsInf(h, 0) && b == h
	}
	return false
}
