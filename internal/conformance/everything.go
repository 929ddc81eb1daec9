package conformance

// The rest of what the 2026-07-28 requirement set of the conformance suite
// calls: plain tools, resources, prompts and completion, none of which asks
// for input, so none goes through the guard. Names and shapes are the
// suite's; the contents are ours.

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/internal/server"
)

// A 1x1 PNG and a WAV file of one silent sample, built here.
var (
	pngPixel = onePixel()
	wavQuiet = wavSilence()
)

func onePixel() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 0xd0, G: 0x30, B: 0x30, A: 0xff})
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

// wavSilence is a RIFF/WAVE file: PCM, mono, 8 kHz, 16 bits, one sample.
func wavSilence() []byte {
	le32 := func(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }
	le16 := func(v uint16) []byte { return []byte{byte(v), byte(v >> 8)} }
	var b []byte
	b = append(b, "RIFF"...)
	b = append(b, le32(36+2)...)
	b = append(b, "WAVEfmt "...)
	b = append(b, le32(16)...)
	b = append(b, le16(1)...) // PCM
	b = append(b, le16(1)...) // mono
	b = append(b, le32(8000)...)
	b = append(b, le32(16000)...)
	b = append(b, le16(2)...)
	b = append(b, le16(16)...)
	b = append(b, "data"...)
	b = append(b, le32(2)...)
	return append(b, 0, 0)
}

// json2020 keeps the 2020-12 keywords the json-schema-2020-12 scenario
// looks for in tools/list ($schema, $defs, $anchor, allOf/anyOf,
// if/then/else, additionalProperties).
const json2020 = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
	`"$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},` +
	`"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},` +
	`"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],` +
	`"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},` +
	`"additionalProperties":false}`

// Complete answers completion/complete with no suggestions: the suite
// checks only that the capability is there and answers.
func Complete(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
}

func registerEverything(s *mcp.Server) {
	noArgs := json.RawMessage(`{"type":"object","properties":{}}`)
	add := func(name, desc string, schema json.RawMessage, h mcp.ToolHandler) {
		if schema == nil {
			schema = noArgs
		}
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: schema}, h)
	}
	embedded := &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://embedded-resource", MIMEType: "text/plain", Text: "An embedded text resource."}}

	add("test_simple_text", "Returns one text block.", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return server.Text("A simple text answer from mrtr-wasm."), nil
	})
	add("test_image_content", "Returns a 1x1 PNG.", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: pngPixel, MIMEType: "image/png"}}}, nil
	})
	add("test_audio_content", "Returns a WAV file of silence.", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: wavQuiet, MIMEType: "audio/wav"}}}, nil
	})
	add("test_embedded_resource", "Returns an embedded text resource.", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{embedded}}, nil
	})
	add("test_multiple_content_types", "Returns text, an image and a resource.", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "Three kinds of content:"},
			&mcp.ImageContent{Data: pngPixel, MIMEType: "image/png"},
			embedded,
		}}, nil
	})
	add("test_tool_with_progress", "Reports progress three times, then answers.", nil, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		tok := r.Params.GetProgressToken()
		if tok != nil {
			for _, p := range []float64{0, 50, 100} {
				_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p, Total: 100})
				time.Sleep(20 * time.Millisecond)
			}
		}
		return server.Text("done"), nil
	})
	add("test_error_handling", "Always fails, as a tool error.", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "This tool always fails (on purpose)."}}}, nil
	})
	add("json_schema_2020_12_tool", "Has an input schema that uses JSON Schema 2020-12.", json.RawMessage(json2020), func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return server.Text("ok"), nil
	})
	add("test_x_mcp_header", "Mirrors its region argument into the Mcp-Param-Region header (SEP-2243).",
		json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"level":{"type":"integer"}}}`),
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Region string }
			_ = json.Unmarshal(r.Params.Arguments, &a)
			return server.Text("region=" + a.Region), nil
		})
	add("test_missing_capability", "Needs the client's sampling capability (-32021 without it).", nil, func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if c := r.ClientCapabilities(); c != nil && c.Sampling != nil {
			return server.Text("sampling is declared"), nil
		}
		return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "this tool needs the sampling capability",
			Data: json.RawMessage(`{"requiredCapabilities":{"sampling":{}}}`)}
	})
	add("test_streaming_elicitation", "Answers with a result only: no request on the response stream.", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return server.Text("a result, and nothing else on the stream"), nil
	})
	add("test_logging_tool", "Tries to log; nothing is sent unless the request set a log level.", nil, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "test_logging_tool ran"})
		return server.Text("logged (if the request asked for logs)"), nil
	})
	add("test_trigger_tool_change", "Changes the tool list (tools/list_changed).", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		add("__changed_tool", "Added to change the tool list.", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return server.Text(""), nil })
		return server.Text("the tool list changed"), nil
	})
	add("test_trigger_prompt_change", "Changes the prompt list (prompts/list_changed).", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.AddPrompt(&mcp.Prompt{Name: "__changed_prompt", Description: "Added to change the prompt list."}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "changed"}}}}, nil
		})
		return server.Text("the prompt list changed"), nil
	})

	s.AddResource(&mcp.Resource{Name: "static-text", URI: "test://static-text", MIMEType: "text/plain", Description: "A fixed text."},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/plain", Text: "A fixed text resource of mrtr-wasm."}}}, nil
		})
	s.AddResource(&mcp.Resource{Name: "static-binary", URI: "test://static-binary", MIMEType: "image/png", Description: "A fixed PNG."},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "image/png", Blob: pngPixel}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "template", URITemplate: "test://template/{id}/data", MIMEType: "application/json", Description: "Data by id."},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id, ok := strings.CutPrefix(r.Params.URI, "test://template/")
			id, ok2 := strings.CutSuffix(id, "/data")
			if !ok || !ok2 || id == "" || strings.Contains(id, "/") {
				return nil, mcp.ResourceNotFoundError(r.Params.URI)
			}
			b, _ := json.Marshal(map[string]string{"id": id})
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
		})

	msg := func(c mcp.Content) *mcp.GetPromptResult {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: c}}}
	}
	s.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Description: "A prompt without arguments."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return msg(&mcp.TextContent{Text: "Say something simple."}), nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Description: "A prompt with two arguments.",
		Arguments: []*mcp.PromptArgument{{Name: "arg1", Required: true}, {Name: "arg2", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return msg(&mcp.TextContent{Text: "First: " + r.Params.Arguments["arg1"] + "; second: " + r.Params.Arguments["arg2"]}), nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt that embeds a resource.",
		Arguments: []*mcp.PromptArgument{{Name: "resourceUri", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return msg(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: r.Params.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded in a prompt."}}), nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return msg(&mcp.ImageContent{Data: pngPixel, MIMEType: "image/png"}), nil
		})
}
