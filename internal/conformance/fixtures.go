package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/observe"
	"github.com/mrtr-wasm/mrtr-wasm/internal/server"
)

// Fixtures serves the suite's tools with a guard.
type Fixtures struct {
	g   observe.Guard
	m   *observe.Metrics
	log *slog.Logger
}

// Register adds the fixture tools and the prompt to s. g should have no
// deployment policy (the fixtures ask for sampling and roots, which the
// demo policy refuses).
// wrap is applied to every guarded tool's handler (the legacy server's
// session loop).
func Register(s *mcp.Server, wrap func(mcp.ToolHandler) mcp.ToolHandler, g observe.Guard, m *observe.Metrics, log *slog.Logger) {
	f := &Fixtures{g: observe.Instrument(g, m), m: m, log: log}
	noArgs := json.RawMessage(`{"type":"object","properties":{}}`)
	add := func(name, desc string, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: noArgs}, wrap(h))
	}
	add("test_input_required_result_elicitation", "Asks for the caller's name (form) and greets them.", f.elicitation)
	add("test_input_required_result_sampling", "Asks the client's model a question (sampling).", f.sampling)
	add("test_input_required_result_list_roots", "Asks for the client's roots.", f.listRoots)
	add("test_input_required_result_request_state", "Asks for a confirmation and checks the echoed requestState.", f.requestState)
	add("test_input_required_result_multiple_inputs", "Asks for a form, a sampling and the roots in one round.", f.multipleInputs)
	add("test_input_required_result_multi_round", "Asks two rounds (name, then colour) before completing.", f.multiRound)
	add("test_input_required_result_tampered_state", "Asks for a confirmation; a tampered requestState is refused.", f.tamperedState)
	add("test_input_required_result_capabilities", "Asks only for the input kinds the client declared.", f.capabilities)
	s.AddPrompt(&mcp.Prompt{Name: "test_input_required_result_prompt", Description: "A prompt that asks for context first."}, f.prompt)
	registerEverything(s)
	registerLegacyEra(s, wrap, f)
}

var (
	nameSchema    = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)
	colorSchema   = json.RawMessage(`{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}`)
	confirmSchema = json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)
	contextSchema = json.RawMessage(`{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}`)
)

func sampling(key, text string, maxTokens int) host.InputRequest {
	p, _ := json.Marshal(map[string]any{
		"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": text}}},
		"maxTokens": maxTokens,
	})
	return host.Sampling(key, p)
}

// step runs one round of a guarded request: a retry is resumed; a first
// call is asked, unless it already carries answers (then they are checked
// against a freshly sealed ask of the same inputs). ask is set when the
// client must be asked (again).
func (f *Fixtures) step(ctx context.Context, tool string, req *host.Request, inputs []host.InputRequest) (out *host.Outcome, ask *host.InputRequiredResult, err error) {
	defer func() { f.record(ctx, tool, req, out, ask, err) }()
	if req.IsRetry() {
		out, err = f.g.Resume(ctx, req)
		if err == nil && out.Status == host.InputRequired {
			ask = out.InputRequired
		}
		return out, ask, err
	}
	sealed, err := f.g.Ask(ctx, req, inputs)
	if err != nil {
		return nil, nil, err
	}
	if !offered(req.InputResponses) {
		return nil, sealed, nil
	}
	r := *req
	r.RequestState = sealed.RequestState
	out, err = f.g.Resume(ctx, &r)
	if err == nil && out.Status == host.InputRequired {
		ask = out.InputRequired
	}
	return out, ask, err
}

func offered(responses json.RawMessage) bool {
	s := strings.TrimSpace(string(responses))
	return s != "" && s != "null" && s != "{}"
}

func (f *Fixtures) record(ctx context.Context, tool string, req *host.Request, out *host.Outcome, ask *host.InputRequiredResult, err error) {
	outcome := "error"
	attrs := []slog.Attr{slog.String("tool", tool), slog.String("principal", req.Principal), slog.Bool("retry", req.IsRetry())}
	switch {
	case err != nil:
		outcome = "rejected"
		if e, ok := host.AsError(err); ok {
			attrs = append(attrs, slog.String("code", e.Code))
			if e.Reason != "" {
				attrs = append(attrs, slog.String("reason", e.Reason))
			}
		}
	case ask != nil:
		outcome = "input_required"
	case out != nil:
		outcome = string(out.Status)
	}
	f.m.Outcomes.WithLabelValues(tool, outcome).Inc()
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelWarn
	}
	f.log.LogAttrs(ctx, level, "tool call", append(attrs, slog.String("outcome", outcome))...)
}

// finish turns a round into the tool's result: an ask, a refusal, a
// decline or cancel, or done(out) for a complete outcome.
func finish(out *host.Outcome, ask *host.InputRequiredResult, err error, done func(*host.Outcome) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	switch {
	case err != nil:
		return nil, server.RPCError(err)
	case ask != nil:
		return server.InputRequired(ask)
	case out.Status == host.Declined:
		return server.Text("Declined: nothing was done."), nil
	case out.Status == host.Cancelled:
		return server.Text("Cancelled: nothing was done; call again any time."), nil
	}
	return done(out)
}

func (f *Fixtures) request(r *mcp.CallToolRequest) (*host.Request, error) {
	req, err := server.HostRequest(r)
	if err != nil {
		return nil, server.RPCError(&host.Error{Code: "mrtr.request.malformed", Message: "malformed request"})
	}
	return req, nil
}

func (f *Fixtures) elicitation(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	req, err := f.request(r)
	if err != nil {
		return nil, err
	}
	out, ask, err := f.step(ctx, r.Params.Name, req, []host.InputRequest{host.Form("user_name", "What is your name?", nameSchema)})
	return finish(out, ask, err, func(out *host.Outcome) (*mcp.CallToolResult, error) {
		var c struct{ Name string }
		_ = out.Content("user_name", &c)
		return server.Text(fmt.Sprintf("Hello, %s!", c.Name)), nil
	})
}

func (f *Fixtures) sampling(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	req, err := f.request(r)
	if err != nil {
		return nil, err
	}
	out, ask, err := f.step(ctx, r.Params.Name, req, []host.InputRequest{sampling("capital_question", "What is the capital of France?", 100)})
	return finish(out, ask, err, func(out *host.Outcome) (*mcp.CallToolResult, error) {
		return server.Text("Sampling response: " + samplingText(out.Answers["capital_question"])), nil
	})
}

// samplingText takes the first text block of a CreateMessageResult (its
// content is one block or an array of blocks).
func samplingText(raw json.RawMessage) string {
	var r struct {
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(raw, &r)
	var one struct{ Type, Text string }
	if json.Unmarshal(r.Content, &one) == nil && one.Type == "text" {
		return one.Text
	}
	var many []struct{ Type, Text string }
	_ = json.Unmarshal(r.Content, &many)
	for _, b := range many {
		if b.Type == "text" {
			return b.Text
		}
	}
	return "(non-text response)"
}

func rootURIs(raw json.RawMessage) []string {
	var r struct {
		Roots []struct{ URI string } `json:"roots"`
	}
	_ = json.Unmarshal(raw, &r)
	var uris []string
	for _, x := range r.Roots {
		uris = append(uris, x.URI)
	}
	return uris
}

func (f *Fixtures) listRoots(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	req, err := f.request(r)
	if err != nil {
		return nil, err
	}
	out, ask, err := f.step(ctx, r.Params.Name, req, []host.InputRequest{host.Roots("client_roots")})
	return finish(out, ask, err, func(out *host.Outcome) (*mcp.CallToolResult, error) {
		uris := rootURIs(out.Answers["client_roots"])
		return server.Text(fmt.Sprintf("Client exposed %d root(s): %s", len(uris), strings.Join(uris, ", "))), nil
	})
}

func (f *Fixtures) requestState(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return f.confirm(ctx, r)
}

func (f *Fixtures) tamperedState(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return f.confirm(ctx, r)
}

// confirm asks for a confirmation; the retry completes only when the
// guard opened the sealed state (MAC, expiry, principal, tool, arguments).
func (f *Fixtures) confirm(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	req, err := f.request(r)
	if err != nil {
		return nil, err
	}
	out, ask, err := f.step(ctx, r.Params.Name, req, []host.InputRequest{host.Form("confirm", "Please confirm", confirmSchema)})
	return finish(out, ask, err, func(out *host.Outcome) (*mcp.CallToolResult, error) {
		return server.Text("state-ok: requestState received and confirmation accepted"), nil
	})
}

func (f *Fixtures) multipleInputs(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	req, err := f.request(r)
	if err != nil {
		return nil, err
	}
	out, ask, err := f.step(ctx, r.Params.Name, req, []host.InputRequest{
		host.Form("user_name", "What is your name?", nameSchema),
		sampling("greeting", "Generate a greeting", 50),
		host.Roots("client_roots"),
	})
	return finish(out, ask, err, func(out *host.Outcome) (*mcp.CallToolResult, error) {
		var c struct{ Name string }
		_ = out.Content("user_name", &c)
		return server.Text(fmt.Sprintf("%s %s — %d root(s) visible", samplingText(out.Answers["greeting"]), c.Name, len(rootURIs(out.Answers["client_roots"])))), nil
	})
}

func (f *Fixtures) multiRound(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	req, err := f.request(r)
	if err != nil {
		return nil, err
	}
	out, ask, err := f.step(ctx, r.Params.Name, req, []host.InputRequest{host.Form("step1", "Step 1: What is your name?", nameSchema)})
	return finish(out, ask, err, func(out *host.Outcome) (*mcp.CallToolResult, error) {
		if _, ok := out.Answers["step2"]; !ok {
			// Round 1 done: ask round 2, carrying the name in the sealed state.
			res, err := f.g.Ask(ctx, req, []host.InputRequest{host.Form("step2", "Step 2: What is your favorite color?", colorSchema)}, host.WithPrevious(out))
			if err != nil {
				return nil, server.RPCError(err)
			}
			return server.InputRequired(res)
		}
		var n struct{ Name string }
		var c struct{ Color string }
		_ = out.Content("step1", &n)
		_ = out.Content("step2", &c)
		return server.Text(fmt.Sprintf("Multi-round complete: %s likes %s", n.Name, c.Color)), nil
	})
}

// capabilities asks only for what this request's clientCapabilities
// declare (read afresh on every request).
func (f *Fixtures) capabilities(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	req, err := f.request(r)
	if err != nil {
		return nil, err
	}
	var caps struct {
		Elicitation json.RawMessage `json:"elicitation"`
		Sampling    json.RawMessage `json:"sampling"`
		Roots       json.RawMessage `json:"roots"`
	}
	_ = json.Unmarshal(req.Capabilities, &caps)
	declared := func(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
	var inputs []host.InputRequest
	if declared(caps.Elicitation) {
		inputs = append(inputs, host.Form("user_name", "What is your name?", nameSchema))
	}
	if declared(caps.Sampling) {
		inputs = append(inputs, sampling("greeting", "Generate a short greeting", 50))
	}
	if declared(caps.Roots) {
		inputs = append(inputs, host.Roots("client_roots"))
	}
	if len(inputs) == 0 && !req.IsRetry() {
		return server.Text("No declared client capability supports an in-band input request"), nil
	}
	out, ask, err := f.step(ctx, r.Params.Name, req, inputs)
	return finish(out, ask, err, func(out *host.Outcome) (*mcp.CallToolResult, error) {
		return server.Text("Capability-aware input requests fulfilled"), nil
	})
}

func (f *Fixtures) prompt(ctx context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	req, err := server.HostPromptRequest(r)
	if err != nil {
		return nil, server.RPCError(&host.Error{Code: "mrtr.request.malformed", Message: "malformed request"})
	}
	out, ask, err := f.step(ctx, r.Params.Name, req, []host.InputRequest{host.Form("user_context", "Please provide context for the prompt", contextSchema)})
	switch {
	case err != nil:
		return nil, server.RPCError(err)
	case ask != nil:
		m, err := server.ToInputRequests(ask)
		if err != nil {
			return nil, server.RPCError(err)
		}
		return &mcp.GetPromptResult{InputRequests: m, RequestState: ask.RequestState}, nil
	}
	text := "Context: (none: the request was " + string(out.Status) + ")"
	if out.Status == host.Complete {
		var c struct{ Context string }
		_ = out.Content("user_context", &c)
		text = "Context: " + c.Context
	}
	return &mcp.GetPromptResult{
		Description: "A prompt with elicited context",
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
	}, nil
}
