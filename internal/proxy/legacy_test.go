package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLegacyClientThroughProxy: a 2025-11-25 client (the official Go SDK
// pinned to it) gets a session at the proxy, in front of a 2026-07-28
// upstream on the same SDK that asks with input_required and an
// unsealed requestState. The proxy asks the client on its session,
// re-asks a wrong email itself, and forwards only the valid answer.
func TestLegacyClientThroughProxy(t *testing.T) {
	var calls, booked atomic.Int64
	up := mcp.NewServer(&mcp.Implementation{Name: "unguarded", Version: "1"}, nil)
	up.AddTool(&mcp.Tool{Name: "book", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls.Add(1)
			if r.Params.InputResponses == nil {
				return &mcp.CallToolResult{RequestState: "step=1", InputRequests: mcp.InputRequestMap{
					"contact": &mcp.ElicitParams{Message: "Who is it for?", RequestedSchema: json.RawMessage(
						`{"type":"object","properties":{"name":{"type":"string"},"email":{"type":"string","format":"email"}},"required":["name","email"]}`)},
				}}, nil
			}
			er, _ := r.Params.InputResponses["contact"].(*mcp.ElicitResult)
			if r.Params.RequestState != "step=1" || er == nil || er.Action != "accept" {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "bad retry"}}}, nil
			}
			booked.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "booked for " + er.Content["email"].(string)}}}, nil
		})
	ups := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(ups.Close)
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, ups.URL))

	var asked []string
	c := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, r.Params.Message)
			if len(asked) == 1 {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "email": "not an email"}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "email": "ada@example.com"}}, nil
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" || cs.ID() == "" {
		t.Fatalf("negotiated %q, session %q", v, cs.ID())
	}
	tl, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tl.Tools) != 1 || tl.Tools[0].Name != "book" {
		t.Fatalf("tools/list: %v %+v", err, tl)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "book", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		if res != nil && len(res.Content) > 0 {
			t.Fatalf("book: %v %s", err, res.Content[0].(*mcp.TextContent).Text)
		}
		t.Fatalf("book: %v %+v", err, res)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "booked for ada@example.com" {
		t.Fatalf("result %q", got)
	}
	if len(asked) != 2 || !strings.Contains(strings.ToLower(asked[1]), "email") {
		t.Fatalf("want the wrong email re-asked by name, got %q", asked)
	}
	if calls.Load() != 2 || booked.Load() != 1 {
		t.Fatalf("upstream saw %d calls and booked %d times; want 2 and 1 (the re-ask never reaches it)", calls.Load(), booked.Load())
	}
}

// promptsUpstream is a 2026-07-28 server on the Go SDK with a prompt and
// a templated resource that ask with input_required, a plain resource,
// and a tool that reports progress and logs before its answer.
func promptsUpstream() *mcp.Server {
	up := mcp.NewServer(&mcp.Implementation{Name: "unguarded", Version: "1"}, nil)
	up.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if r.Params.InputResponses == nil {
				return &mcp.GetPromptResult{RequestState: "p1", InputRequests: mcp.InputRequestMap{
					"tone": &mcp.ElicitParams{Message: "Which tone?", RequestedSchema: json.RawMessage(
						`{"type":"object","properties":{"tone":{"type":"string","enum":["warm","dry"]}},"required":["tone"]}`)},
				}}, nil
			}
			er, _ := r.Params.InputResponses["tone"].(*mcp.ElicitResult)
			if r.Params.RequestState != "p1" || er == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad retry"}
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
				Content: &mcp.TextContent{Text: "Hello " + r.Params.Arguments["who"] + ", in a " + er.Content["tone"].(string) + " tone"}}}}, nil
		})
	up.AddResource(&mcp.Resource{URI: "demo://note", Name: "note", MIMEType: "text/plain"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "a note"}}}, nil
		})
	up.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "demo://item/{id}", Name: "item"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			if r.Params.InputResponses == nil {
				return &mcp.ReadResourceResult{RequestState: "r1", InputRequests: mcp.InputRequestMap{
					"why": &mcp.ElicitParams{Message: "Why do you read it?", RequestedSchema: json.RawMessage(
						`{"type":"object","properties":{"reason":{"type":"string"}},"required":["reason"]}`)},
				}}, nil
			}
			er, _ := r.Params.InputResponses["why"].(*mcp.ElicitResult)
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: r.Params.URI + " because " + er.Content["reason"].(string)}}}, nil
		})
	up.AddTool(&mcp.Tool{Name: "work", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if tok := r.Params.GetProgressToken(); tok != nil {
				_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "halfway"})
			}
			_ = r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Data: "too fine"})
			_ = r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Data: "working hard"})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	return up
}

// TestLegacyClientPromptsResourcesThroughProxy: a 2025-11-25 client sees
// the upstream's prompts, resources and resource templates at the proxy;
// a prompt and a templated resource that ask with input_required are
// fulfilled on its session; a URI the upstream does not know gets the
// upstream's own error; progress and log messages sent before a tool's
// answer reach the client (under its own token, at the level it set).
func TestLegacyClientPromptsResourcesThroughProxy(t *testing.T) {
	up := promptsUpstream()
	ups := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ups.Close)
	base, _ := newProxy(t, newGuard(t), httpUpstream(t, ups.URL))

	var mu sync.Mutex
	var progress []string
	var logs []string
	c := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if strings.Contains(r.Params.Message, "tone") {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"tone": "warm"}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"reason": "an audit"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, fmt.Sprintf("%v %v/%v %s", r.Params.ProgressToken, r.Params.Progress, r.Params.Total, r.Params.Message))
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, fmt.Sprintf("%s %v", r.Params.Level, r.Params.Data))
		},
	})
	ctx := context.Background()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	caps := cs.InitializeResult().Capabilities
	if caps.Prompts == nil || caps.Resources == nil || caps.Tools == nil || caps.Completions != nil {
		t.Fatalf("capabilities %+v: want tools, prompts and resources, and no completions (the upstream has none)", caps)
	}

	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) != 1 || pl.Prompts[0].Name != "greet" || len(pl.Prompts[0].Arguments) != 1 {
		t.Fatalf("prompts/list: %v %+v", err, pl)
	}
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "Ada"}})
	if err != nil || len(gp.Messages) != 1 || gp.Messages[0].Content.(*mcp.TextContent).Text != "Hello Ada, in a warm tone" {
		t.Fatalf("prompts/get: %v %+v", err, gp)
	}

	rl, err := cs.ListResources(ctx, nil)
	if err != nil || len(rl.Resources) != 1 || rl.Resources[0].URI != "demo://note" {
		t.Fatalf("resources/list: %v %+v", err, rl)
	}
	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tl.ResourceTemplates) != 1 || tl.ResourceTemplates[0].URITemplate != "demo://item/{id}" {
		t.Fatalf("resources/templates/list: %v %+v", err, tl)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://note"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "a note" {
		t.Fatalf("resources/read: %v %+v", err, rr)
	}
	rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://item/7"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "demo://item/7 because an audit" {
		t.Fatalf("resources/read of a template that asks: %v %+v", err, rr)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "other://nothing"}); err == nil {
		t.Fatal("a URI the upstream does not know was read")
	}

	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	params := &mcp.CallToolParams{Name: "work", Arguments: map[string]any{}}
	params.SetProgressToken("tok-7")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "done" {
		t.Fatalf("work: %v %+v", err, res)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		got := len(progress) >= 1 && len(logs) >= 1
		mu.Unlock()
		if got || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) != 1 || progress[0] != "tok-7 1/2 halfway" {
		t.Fatalf("progress relayed: %q", progress)
	}
	if len(logs) != 1 || logs[0] != "warning working hard" {
		t.Fatalf("log messages relayed: %q (want the warning only: the client set info)", logs)
	}
}

// TestLegacyListsFollowTheUpstream: a session gets the upstream's
// instructions and completion (from its server/discover), and a list it
// asks again is what the upstream lists now.
func TestLegacyListsFollowTheUpstream(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "unguarded", Version: "1"}, &mcp.ServerOptions{
		Instructions: "Ask for the old prompt.",
		CompletionHandler: func(_ context.Context, r *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{r.Params.Argument.Value + "-completed"}}}, nil
		},
	})
	hello := func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}}}, nil
	}
	up.AddPrompt(&mcp.Prompt{Name: "old"}, hello)
	ups := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ups.Close)
	p, err := New(Config{Guard: newGuard(t), Upstream: httpUpstream(t, ups.URL), ToolsTTL: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(srv.Close)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	names := func() string {
		t.Helper()
		pl, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, pr := range pl.Prompts {
			n = append(n, pr.Name)
		}
		return strings.Join(n, ",")
	}
	if ir := cs.InitializeResult(); ir.Instructions != "Ask for the old prompt." || ir.Capabilities.Completions == nil {
		t.Fatalf("initialize: instructions %q, completions %v", ir.Instructions, ir.Capabilities.Completions)
	}
	cr, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "old"}, Argument: mcp.CompleteParamsArgument{Name: "x", Value: "ab"}})
	if err != nil || len(cr.Completion.Values) != 1 || cr.Completion.Values[0] != "ab-completed" {
		t.Fatalf("completion/complete: %v %+v", err, cr)
	}
	if got := names(); got != "old" {
		t.Fatalf("first list: %q", got)
	}
	up.AddPrompt(&mcp.Prompt{Name: "new"}, hello)
	up.RemovePrompts("old")
	time.Sleep(60 * time.Millisecond)
	if got := names(); got != "new" {
		t.Fatalf("after the upstream changed: %q", got)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "new"}); err != nil {
		t.Fatal(err)
	}
}
