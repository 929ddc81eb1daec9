package conformance

// The fixture tools of the suite's 2025-11-25 scenarios (tools-call-
// elicitation, elicitation-sep1034-defaults, elicitation-sep1330-enums,
// tools-call-sampling, tools-call-with-logging). The asking ones are
// guarded tools like the others: they return input_required, and on a
// legacy session serve's session loop asks the client and resumes them.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/server"
)

var (
	userSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"username":{"type":"string","description":"User's response"},` +
		`"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}`)
	defaultsSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"name":{"type":"string","default":"John Doe"},` +
		`"age":{"type":"integer","default":30},` +
		`"score":{"type":"number","default":95.5},` +
		`"status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},` +
		`"verified":{"type":"boolean","default":true}}}`)
	enumsSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"untitledSingle":{"type":"string","enum":["option1","option2","option3"]},` +
		`"titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First"},{"const":"value2","title":"Second"},{"const":"value3","title":"Third"}]},` +
		`"legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},` +
		`"untitledMulti":{"type":"array","items":{"type":"string","enum":["option1","option2","option3"]}},` +
		`"titledMulti":{"type":"array","items":{"anyOf":[{"const":"value1","title":"First"},{"const":"value2","title":"Second"},{"const":"value3","title":"Third"}]}}}}`)
)

func registerLegacyEra(s *mcp.Server, wrap func(mcp.ToolHandler) mcp.ToolHandler, f *Fixtures) {
	add := func(name, desc string, schema json.RawMessage, h mcp.ToolHandler) {
		if schema == nil {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: schema}, h)
	}
	msgArg := json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`)
	promptArg := json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}`)
	add("test_elicitation", "Asks the user for a username and an email (form).", msgArg, wrap(f.formTool("response", func(r *host.Request) string {
		var a struct{ Message string }
		_ = json.Unmarshal(r.Arguments, &a)
		if a.Message == "" {
			return "Please answer."
		}
		return a.Message
	}, userSchema)))
	add("test_elicitation_sep1034_defaults", "Asks with a form whose fields have defaults (SEP-1034).", nil,
		wrap(f.formTool("defaults", func(*host.Request) string { return "Please review the defaults." }, defaultsSchema)))
	add("test_elicitation_sep1330_enums", "Asks with a form of every enum kind (SEP-1330).", nil,
		wrap(f.formTool("enums", func(*host.Request) string { return "Please choose." }, enumsSchema)))
	add("test_sampling", "Asks the client's model (sampling).", promptArg, wrap(func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		req, err := f.request(r)
		if err != nil {
			return nil, err
		}
		var a struct{ Prompt string }
		_ = json.Unmarshal(req.Arguments, &a)
		out, ask, err := f.step(ctx, r.Params.Name, req, []host.InputRequest{sampling("llm", a.Prompt, 100)})
		return finish(out, ask, err, func(out *host.Outcome) (*mcp.CallToolResult, error) {
			return server.Text("LLM response: " + samplingText(out.Answers["llm"])), nil
		})
	}))
	add("test_tool_with_logging", "Sends three log messages while it runs.", nil, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if i > 0 {
				time.Sleep(50 * time.Millisecond)
			}
			if r.Session != nil {
				_ = r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: msg})
			}
		}
		return server.Text("Tool with logging executed successfully"), nil
	})
}

// formTool asks one form and reports the answer as the suite expects.
func (f *Fixtures) formTool(key string, message func(*host.Request) string, schema json.RawMessage) mcp.ToolHandler {
	return func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		req, err := f.request(r)
		if err != nil {
			return nil, err
		}
		out, ask, err := f.step(ctx, r.Params.Name, req, []host.InputRequest{host.Form(key, message(req), schema)})
		if err != nil || ask != nil {
			return finish(out, ask, err, nil)
		}
		content := "{}"
		var c json.RawMessage
		if out.Status == host.Complete && out.Content(key, &c) == nil && len(c) > 0 {
			content = string(c)
		}
		return server.Text(fmt.Sprintf("User response: <action: %s, content: %s>", actionOf(out.Status), content)), nil
	}
}

func actionOf(s host.Status) string {
	switch s {
	case host.Declined:
		return "decline"
	case host.Cancelled:
		return "cancel"
	}
	return "accept"
}
