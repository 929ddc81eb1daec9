package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream"
)

// Only what was asked and checked reaches the upstream (security review
// 0d32117, finding 2): a form that asks for a name, answered with the
// name, fields nobody asked (a nested object among them) and a member
// beside action and content, reaches the upstream as the name alone, on
// every path.

// nameSchema is the form every upstream here asks: a name, nothing else.
const nameSchema = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`

// hostileAnswer answers that form with more than it asked.
const hostileAnswer = `{"action":"accept","content":{"name":"Bob","role":"admin","password":"hunter2","profile":{"isAdmin":true,"deep":[{"x":[1,2,3]}]}},"extraTop":{"x":1}}`

// askedOnly is what the upstream may get for it.
const askedOnly = `{"action":"accept","content":{"name":"Bob"}}`

// recorder keeps the raw bodies an upstream received that contain mark.
type recorder struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (r *recorder) wrap(mark string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		if bytes.Contains(b, []byte(mark)) {
			r.mu.Lock()
			r.bodies = append(r.bodies, b)
			r.mu.Unlock()
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, req)
	})
}

func (r *recorder) all() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bodies)
}

// member returns the raw bytes of the member at path in body.
func member(t *testing.T, body []byte, path ...string) string {
	t.Helper()
	v := json.RawMessage(body)
	for _, k := range path {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(v, &m); err != nil {
			t.Fatalf("%s in %s: %v", k, body, err)
		}
		v = m[k]
	}
	return string(v)
}

// fieldsText is a tool result naming the content fields the handler got.
func fieldsText(content map[string]any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fields: " + strings.Join(slices.Sorted(maps.Keys(content)), ",")}}}
}

// modernNameUpstream is a 2026-07-28 server on the Go SDK whose tool
// "profile" asks for a name with input_required and answers with the
// content fields it was given (as a server that spreads them into a
// record would store them); rec holds each retry's body.
func modernNameUpstream(t *testing.T, rec *recorder) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "modern", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "profile", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			er, _ := r.Params.InputResponses["q"].(*mcp.ElicitResult)
			if er == nil {
				return &mcp.CallToolResult{RequestState: "step=1", InputRequests: mcp.InputRequestMap{
					"q": &mcp.ElicitParams{Message: "Your name?", RequestedSchema: json.RawMessage(nameSchema)},
				}}, nil
			}
			return fieldsText(er.Content), nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	ts := httptest.NewServer(rec.wrap(`"inputResponses"`, h))
	t.Cleanup(ts.Close)
	return ts.URL
}

// answerTooMuch calls the tool profile, answers its round (request key)
// with hostileAnswer and checks that the upstream's handler got the name
// alone. It returns the round's state.
func answerTooMuch(t *testing.T, base, key string) string {
	t.Helper()
	first, _ := callTool(t, base, "profile", `{}`, "")
	st := sealedState(t, first)
	m, _ := callTool(t, base, "profile", `{}`, `,"inputResponses":{"`+key+`":`+hostileAnswer+`},"requestState":"`+st+`"`)
	if got := resultText(t, m); got != "fields: name" {
		t.Fatalf("the upstream's handler got %q", got)
	}
	return st
}

// received checks that the upstream got one recorded body, whose member
// at path is want, byte for byte.
func (r *recorder) received(t *testing.T, want string, path ...string) {
	t.Helper()
	bodies := r.all()
	if len(bodies) != 1 {
		t.Fatalf("the upstream got %d answers, want 1", len(bodies))
	}
	if got := member(t, bodies[0], path...); got != want {
		t.Fatalf("the upstream got %s = %s, want %s", strings.Join(path, "."), got, want)
	}
}

func resultText(t *testing.T, m *rpcMsg) string {
	t.Helper()
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &r) != nil || len(r.Content) == 0 {
		t.Fatalf("not a tool result: %s %+v", m.Result, m.Error)
	}
	return r.Content[0].Text
}

// TestForwardOnlyAskedFields: a 2026-07-28 upstream gets the asked field
// alone; what was dropped is counted by kind and logged by name, never by
// value; and a replay that adds another unasked field is the same
// answers: the stored result, the upstream not called again.
func TestForwardOnlyAskedFields(t *testing.T) {
	var rec recorder
	logs, err := os.Create(filepath.Join(t.TempDir(), "proxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	base, p := serveProxy(t, Config{Guard: newGuard(t), Upstream: httpUpstream(t, modernNameUpstream(t, &rec)),
		Logger: slog.New(slog.NewTextHandler(logs, nil))})

	st := answerTooMuch(t, base, "q")
	rec.received(t, `{"q":`+askedOnly+`}`, "params", "inputResponses")
	for kind, want := range map[string]float64{"field": 3, "member": 1, "response": 0} {
		if got := testutil.ToFloat64(p.up.dropped.WithLabelValues(kind)); got != want {
			t.Errorf("dropped{kind=%q} = %v, want %v", kind, got, want)
		}
	}
	raw, _ := os.ReadFile(logs.Name())
	log := string(raw)
	for _, name := range []string{"q.content.role", "q.content.password", "q.content.profile", "q.extraTop"} {
		if !strings.Contains(log, name) {
			t.Errorf("the log does not name %s:\n%s", name, log)
		}
	}
	for _, value := range []string{"hunter2", "admin", "isAdmin"} {
		if strings.Contains(log, value) {
			t.Errorf("a dropped value (%s) reached the log:\n%s", value, log)
		}
	}

	again, _ := callTool(t, base, "profile", `{}`, `,"inputResponses":{"q":{"action":"accept","content":{"isAdmin":true,"name":"Bob"}}},"requestState":"`+st+`"`)
	if got := resultText(t, again); got != "fields: name" {
		t.Fatalf("replay: %q", got)
	}
	if n := len(rec.all()); n != 1 {
		t.Fatalf("a replay with another unasked field reached the upstream (%d retries)", n)
	}
	if got := testutil.ToFloat64(p.up.rounds.WithLabelValues("replayed")); got != 1 {
		t.Fatalf("rounds{replayed} = %v, want 1", got)
	}
}

// TestForwardOnlyAskedFieldsLegacyUpstream: a 2025-era upstream (Go SDK,
// 2025-11-25 only) that elicits in the middle of its call gets, as the
// response to its elicitation/create, the asked field alone.
func TestForwardOnlyAskedFieldsLegacyUpstream(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	srv.AddTool(&mcp.Tool{Name: "profile", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := r.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Your name?", RequestedSchema: json.RawMessage(nameSchema)})
		if err != nil {
			return nil, err
		}
		return fieldsText(res.Content), nil
	})
	var rec recorder
	ts := httptest.NewServer(rec.wrap(`"action"`, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	t.Cleanup(ts.Close)
	up, err := upstream.DetectHTTP(context.Background(), httpUpstream(t, ts.URL), false)
	if err != nil {
		t.Fatal(err)
	}
	base, p := serveProxy(t, Config{Guard: newGuard(t), Upstream: up})

	answerTooMuch(t, base, "elicitation")
	rec.received(t, askedOnly, "result")
	if got := testutil.ToFloat64(p.up.dropped.WithLabelValues("field")); got != 3 {
		t.Fatalf("dropped{kind=field} = %v, want 3", got)
	}
}

// TestForwardOnlyAskedFieldsLegacyClient: a 2025-11-25 client (the Go SDK)
// whose elicitation answer holds fields the form did not ask (its SDK
// lets them through: the schema does not forbid them) reaches a
// 2026-07-28 upstream with the asked field alone.
func TestForwardOnlyAskedFieldsLegacyClient(t *testing.T) {
	var rec recorder
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, modernNameUpstream(t, &rec)))
	c := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Bob", "role": "admin", "password": "hunter2",
				"profile": map[string]any{"isAdmin": true}}}, nil
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "profile", Arguments: map[string]any{}})
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("profile: %v %+v", err, res)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "fields: name" {
		t.Fatalf("the upstream's handler got %q", got)
	}
	rec.received(t, `{"q":`+askedOnly+`}`, "params", "inputResponses")
}
