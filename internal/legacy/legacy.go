package legacy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/internal/mcphttp"
)

// ProtocolVersions are the earlier revisions served on sessions.
var ProtocolVersions = []string{"2025-11-25", "2025-06-18"}

// roundCap stops a tool that keeps asking whatever the guard's round
// limit says (a tool that asks without the guard).
const roundCap = 16

// IsLegacy reports whether ss is a session opened by an initialize of an
// earlier revision.
func IsLegacy(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion < mcphttp.ProtocolVersion
}

// Capabilities states what the session's client declared at initialize
// in the form a 2026-07-28 request carries in _meta.
func Capabilities(ip *mcp.InitializeParams) json.RawMessage {
	caps := map[string]any{}
	if ip != nil && ip.Capabilities != nil {
		c := ip.Capabilities
		if e := c.Elicitation; e != nil {
			el := map[string]any{}
			if e.Form != nil || e.URL == nil { // an empty elicitation object means form (2025-06-18)
				el["form"] = map[string]any{}
			}
			if e.URL != nil {
				el["url"] = map[string]any{}
			}
			caps["elicitation"] = el
		}
		if c.Sampling != nil {
			s := map[string]any{}
			if c.Sampling.Tools != nil {
				s["tools"] = map[string]any{}
			}
			caps["sampling"] = s
		}
		if c.RootsV2 != nil {
			caps["roots"] = map[string]any{}
		}
	}
	b, _ := json.Marshal(caps)
	return b
}

// Result is the result of a request that may ask for input: a tool's, a
// prompt's or a resource's.
type Result interface {
	*mcp.CallToolResult | *mcp.GetPromptResult | *mcp.ReadResourceResult
}

// CallOf is one call of a request: responses are the answers so far as
// the client's JSON (nil on the first call), state the sealed requestState
// to echo ("" on the first call).
type CallOf[R Result] func(ctx context.Context, responses json.RawMessage, state string) (R, error)

// Call is one call of a tool.
type Call = CallOf[*mcp.CallToolResult]

// Observer hears how each round on a session went: "answered" or
// "client_error".
type Observer func(result string)

// Run calls the tool until it completes: each InputRequiredResult is
// fulfilled on the session and the tool called again with the answers and
// its state. A client that cannot answer, or a tool that needs a kind the
// client did not declare (-32021), gets an error result that says why.
func Run(ctx context.Context, ss *mcp.ServerSession, log *slog.Logger, observe Observer, tool string, call Call) (*mcp.CallToolResult, error) {
	return RunOf(ctx, ss, log, observe, tool, call)
}

// RunOf is Run for any request that may ask (tools/call, prompts/get,
// resources/read), named by what. Where Run gives a tool an error result,
// a prompt or a resource, which have none, gets a JSON-RPC error with the
// same text.
func RunOf[R Result](ctx context.Context, ss *mcp.ServerSession, log *slog.Logger, observe Observer, what string, call CallOf[R]) (R, error) {
	var responses json.RawMessage
	state := ""
	for round := 0; ; round++ {
		res, err := call(ctx, responses, state)
		if err != nil {
			var je *jsonrpc.Error
			if errors.As(err, &je) && je.Code == -32021 {
				return failed[R]("This " + kindOf[R]() + " needs to ask you something, and your client did not declare the capability for it (" + je.Message + ").")
			}
			var zero R
			return zero, err
		}
		reqs, next := pending(res)
		if reqs == nil {
			return res, nil
		}
		if round >= roundCap {
			var zero R
			return zero, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the " + kindOf[R]() + " kept asking past the round limit"}
		}
		answers, err := fulfilChecked(ctx, ss, reqs)
		if err != nil {
			if observe != nil {
				observe("client_error")
			}
			// The SDK's refusal of an answer quotes the answer: name the
			// field only, in the log and to the client.
			why := err.Error()
			if field, ok := schemaMismatch(err); ok {
				why = "the answer for " + field + " did not fit the form"
			}
			if log != nil {
				log.Warn("legacy round not answered", kindOf[R](), what, "error", why)
			}
			return failed[R]("The client did not answer this " + kindOf[R]() + "'s question: " + why)
		}
		if observe != nil {
			observe("answered")
		}
		// The answers as the SDK decoded them from the client's response:
		// a session's responses are not captured as sent.
		if responses, err = json.Marshal(answers); err != nil {
			var zero R
			return zero, err
		}
		state = next
	}
}

// pending is what a result asks for and its state (nil: it is complete).
func pending[R Result](res R) (mcp.InputRequestMap, string) {
	switch r := any(res).(type) {
	case *mcp.CallToolResult:
		if r != nil {
			return r.InputRequests, r.RequestState
		}
	case *mcp.GetPromptResult:
		if r != nil {
			return r.InputRequests, r.RequestState
		}
	case *mcp.ReadResourceResult:
		if r != nil {
			return r.InputRequests, r.RequestState
		}
	}
	return nil, ""
}

func kindOf[R Result]() string {
	var zero R
	switch any(zero).(type) {
	case *mcp.GetPromptResult:
		return "prompt"
	case *mcp.ReadResourceResult:
		return "resource"
	}
	return "tool"
}

// failed ends a request the client could not complete: an error result
// for a tool, a JSON-RPC error otherwise.
func failed[R Result](text string) (R, error) {
	var zero R
	if r, ok := any(errorResult(text)).(R); ok {
		return r, nil
	}
	return zero, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: text}
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// sdkReasks bounds how often a form is asked again because the SDK's own
// check of the answer against the form failed (the guard never saw it).
const sdkReasks = 2

// fulfilChecked is Fulfil, but a form answer that the SDK refuses before
// the guard can see it (it checks answers against the form itself, and
// drops the answer) is asked again naming the field, a bounded number of
// times: the client gets the same treatment as from the guard.
func fulfilChecked(ctx context.Context, ss *mcp.ServerSession, reqs mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	for try := 0; ; try++ {
		out, err := Fulfil(ctx, ss, reqs)
		field, ok := schemaMismatch(err)
		if !ok || try >= sdkReasks {
			return out, err
		}
		again := make(mcp.InputRequestMap, len(reqs))
		for k, ir := range reqs {
			if p, ok := ir.(*mcp.ElicitParams); ok {
				cp := *p
				cp.Message = p.Message + "\n\nPlease check: " + field + "."
				ir = &cp
			}
			again[k] = ir
		}
		reqs = again
	}
}

// schemaMismatch recognises the SDK's refusal of an elicitation answer
// and names the field it points at.
func schemaMismatch(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	msg := err.Error()
	if !strings.Contains(msg, "does not match requested schema") {
		return "", false
	}
	field := "your answers"
	if _, rest, ok := strings.Cut(msg, "/properties/"); ok {
		if name, _, ok := strings.Cut(rest, ":"); ok && name != "" {
			field = name
		}
	}
	return field, true
}

// Fulfil sends each input request to the client on its session, one at a
// time (a person answers one form after another).
func Fulfil(ctx context.Context, ss *mcp.ServerSession, reqs mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	out := make(mcp.InputResponseMap, len(reqs))
	for k, ir := range reqs {
		var (
			resp mcp.InputResponse
			err  error
		)
		switch p := ir.(type) {
		case *mcp.ElicitParams:
			resp, err = ss.Elicit(ctx, p)
		case *mcp.CreateMessageParams:
			resp, err = ss.CreateMessage(ctx, p)
		case *mcp.CreateMessageWithToolsParams:
			resp, err = ss.CreateMessageWithTools(ctx, p)
		case *mcp.ListRootsParams:
			resp, err = ss.ListRoots(ctx, p)
		default:
			err = fmt.Errorf("input request %q has a kind that cannot be sent on a session (%T)", k, ir)
		}
		if err != nil {
			return nil, err
		}
		out[k] = resp
	}
	return out, nil
}

// Sessions is the stateful SDK handler for legacy sessions with a cap on
// live ones, overall and per principal. A principal at its own cap gets a
// new session all the same: its least recently used one is closed (one
// principal cannot fill the pool for the others, and a client that lost
// its session id is not locked out). The count and the creation are one
// step under mu: concurrent initializes cannot go past either cap.
type Sessions struct {
	Handler http.Handler
	Server  *mcp.Server
	Max     int
	// PerPrincipal caps one principal's live sessions (default
	// DefaultSessionsPerPrincipal).
	PerPrincipal int
	// Principal names who sends a request (nil: everybody is one).
	Principal func(*http.Request) string
	// Refused is called for each initialize refused at the cap.
	Refused func()
	// Evicted is called for each session closed to make room for its
	// principal's new one.
	Evicted func()

	mu        sync.Mutex
	owners    map[string]*owner // session id -> who opened it, when last used
	opening   int               // initializes under way (counted against Max)
	openingBy map[string]int
}

// DefaultSessionsPerPrincipal is one principal's cap on live legacy
// sessions (as on its subscriptions/listen streams).
const DefaultSessionsPerPrincipal = 16

type owner struct {
	principal string
	used      time.Time
}

// Live is how many legacy sessions are open now.
func (s *Sessions) Live() int {
	n := 0
	for range s.Server.Sessions() {
		n++
	}
	return n
}

func (s *Sessions) principal(r *http.Request) string {
	if s.Principal == nil {
		return ""
	}
	return s.Principal(r)
}

// reserve counts a new session of principal against the caps: ok false
// is a refusal; evict is that principal's least recently used session,
// to close before the new one opens; done ends the reservation with the
// new session's id ("" when none opened).
func (s *Sessions) reserve(principal string) (evict *mcp.ServerSession, done func(id string), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owners == nil {
		s.owners, s.openingBy = map[string]*owner{}, map[string]int{}
	}
	live := map[string]*mcp.ServerSession{}
	for ss := range s.Server.Sessions() {
		live[ss.ID()] = ss
	}
	// Sessions that ended (idle, DELETE, closed) are forgotten here.
	var lru string
	mine := s.openingBy[principal]
	for id, o := range s.owners {
		if live[id] == nil {
			delete(s.owners, id)
			continue
		}
		if o.principal == principal {
			mine++
			if lru == "" || o.used.Before(s.owners[lru].used) {
				lru = id
			}
		}
	}
	// A session being opened is live before its initialize returns: it
	// may count twice for that moment, never zero times.
	total := len(live) + s.opening
	if mine >= cmpOr(s.PerPrincipal, DefaultSessionsPerPrincipal) {
		if lru == "" { // all of them still opening
			return nil, nil, false
		}
		evict = live[lru]
		delete(s.owners, lru)
		total--
	}
	if total >= s.Max {
		return nil, nil, false
	}
	s.opening++
	s.openingBy[principal]++
	return evict, func(id string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.opening--
		if s.openingBy[principal]--; s.openingBy[principal] <= 0 {
			delete(s.openingBy, principal)
		}
		if id != "" {
			s.owners[id] = &owner{principal: principal, used: time.Now()}
		}
	}, true
}

// touch notes a request on session id.
func (s *Sessions) touch(id string) {
	s.mu.Lock()
	if o := s.owners[id]; o != nil {
		o.used = time.Now()
	}
	s.mu.Unlock()
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// isLegacyRequest: a request that names a session, or an initialize
// (which the 2026-07-28 revision does not have).
func isLegacyRequest(r *http.Request, body []byte) bool {
	if r.Header.Get("Mcp-Session-Id") != "" {
		return true
	}
	// A body with neither the bytes "initialize" nor a backslash (an
	// escape) has no string that reads "initialize": the common case
	// skips parsing the whole body, answers and all.
	if len(body) == 0 || bytes.IndexByte(body, '\\') < 0 && !bytes.Contains(body, []byte("initialize")) {
		return false
	}
	var p struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &p) != nil || p.Method != "initialize" {
		return false
	}
	// An initialize sent as 2026-07-28 (its version header says so) asks
	// for a method that revision removed: the modern handler answers it
	// 404 / -32601, as the spec and the conformance suite want.
	v := r.Header.Get("MCP-Protocol-Version")
	return v == "" || v < mcphttp.ProtocolVersion
}

// Router sends legacy traffic to s and everything else to modern. maxBody
// bounds the body it reads to tell them apart.
func Router(modern http.Handler, s *Sessions, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			// Read once: the modern handler's checks take these bytes as they are.
			b, err := mcphttp.ReadBody(w, r, maxBody)
			if err != nil {
				mcphttp.WriteBodyError(w, err, maxBody)
				return
			}
			body = b
		}
		if !isLegacyRequest(r, body) {
			modern.ServeHTTP(w, r)
			return
		}
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			s.touch(id)
		} else {
			evict, done, ok := s.reserve(s.principal(r))
			if !ok {
				if s.Refused != nil {
					s.Refused()
				}
				var p struct {
					ID json.RawMessage `json:"id"`
				}
				_ = json.Unmarshal(body, &p)
				if len(p.ID) == 0 {
					p.ID = json.RawMessage("null")
				}
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "5")
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"too many sessions: try again later"}}`, p.ID, mcphttp.CodeServerBusy)
				return
			}
			if evict != nil {
				_ = evict.Close()
				if s.Evicted != nil {
					s.Evicted()
				}
			}
			// The handler names the new session in its answer's header.
			defer func() { done(w.Header().Get("Mcp-Session-Id")) }()
			s.Handler.ServeHTTP(w, r)
			return
		}
		s.Handler.ServeHTTP(w, r)
	})
}
