// Command goclient is the go-sdk (v1.8.0) MCP client as the client matrix
// (e2e/matrix.test.mjs) drives it: it connects in the era -era names, over
// Streamable HTTP (-url) or to a stdio server (the command after --),
// lists the tools, calls -plain and then -input, answering each form
// through its ElicitationHandler (the SDK fulfils 2026-07-28
// input_required results and 2025-era elicitation/create requests with
// it), and prints what it got as one JSON object.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type report struct {
	Protocol string   `json:"protocol"`
	Tools    []string `json:"tools"`
	Plain    string   `json:"plain"`
	Input    string   `json:"input,omitempty"`
	Asked    int      `json:"asked"`
}

func main() {
	era := flag.String("era", "2026-07-28", "protocol version the client asks for")
	url := flag.String("url", "", "Streamable HTTP endpoint (else the stdio command after --)")
	plain := flag.String("plain", "", "a tool that needs no input")
	plainArgs := flag.String("plain-args", "{}", "its arguments (JSON)")
	input := flag.String("input", "", "a tool that asks for input (empty: none)")
	inputArgs := flag.String("input-args", "{}", "its arguments (JSON)")
	flag.Parse()
	if err := run(*era, *url, flag.Args(), *plain, *plainArgs, *input, *inputArgs); err != nil {
		fmt.Fprintln(os.Stderr, "goclient:", err)
		os.Exit(1)
	}
}

func run(era, url string, command []string, plain, plainArgs, input, inputArgs string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	var rep report
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-matrix", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			rep.Asked++
			return &mcp.ElicitResult{Action: "accept", Content: fill(req.Params.RequestedSchema)}, nil
		},
	})
	var t mcp.Transport
	switch {
	case url != "":
		t = &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}
	case len(command) > 0:
		t = &mcp.CommandTransport{Command: exec.Command(command[0], command[1:]...)}
	default:
		return errors.New("give -url or a command after --")
	}
	cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	rep.Protocol = cs.InitializeResult().ProtocolVersion
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, tool := range tools.Tools {
		rep.Tools = append(rep.Tools, tool.Name)
	}
	if rep.Plain, err = call(ctx, cs, plain, plainArgs); err != nil {
		return fmt.Errorf("tools/call %s: %w", plain, err)
	}
	if input != "" {
		if rep.Input, err = call(ctx, cs, input, inputArgs); err != nil {
			return fmt.Errorf("tools/call %s: %w", input, err)
		}
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// call calls a tool and returns its text and structured content.
func call(ctx context.Context, cs *mcp.ClientSession, name, args string) (string, error) {
	var a map[string]any
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		return "", err
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: a})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text + "\n")
		}
	}
	if res.StructuredContent != nil {
		sc, _ := json.Marshal(res.StructuredContent)
		b.Write(sc)
	}
	if res.IsError {
		return "", fmt.Errorf("the tool failed: %s", b.String())
	}
	return b.String(), nil
}

// fill answers a form with a valid value for each field, as a person
// would: the first option of a choice, true for a confirmation, a number
// within bounds, a string of the asked format.
func fill(schema any) map[string]any {
	raw, _ := json.Marshal(schema)
	var s struct {
		Properties map[string]struct {
			Type    string                `json:"type"`
			Format  string                `json:"format"`
			Enum    []any                 `json:"enum"`
			OneOf   []struct{ Const any } `json:"oneOf"`
			Minimum *float64              `json:"minimum"`
			Items   *struct {
				Enum  []any                 `json:"enum"`
				AnyOf []struct{ Const any } `json:"anyOf"`
			} `json:"items"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(raw, &s)
	out := map[string]any{}
	for name, p := range s.Properties {
		switch {
		case len(p.OneOf) > 0:
			out[name] = p.OneOf[0].Const
		case len(p.Enum) > 0:
			out[name] = p.Enum[0]
		case p.Type == "boolean":
			out[name] = true
		case p.Type == "integer" || p.Type == "number":
			n := 42.0
			if p.Minimum != nil && *p.Minimum > n {
				n = *p.Minimum
			}
			out[name] = n
		case p.Type == "array" && p.Items != nil && len(p.Items.Enum) > 0:
			out[name] = []any{p.Items.Enum[0]}
		case p.Type == "array" && p.Items != nil && len(p.Items.AnyOf) > 0:
			out[name] = []any{p.Items.AnyOf[0].Const}
		case p.Format == "email":
			out[name] = "ann@example.com"
		case p.Format == "uri":
			out[name] = "https://example.com/ann"
		case p.Format == "date":
			out[name] = "2026-12-24"
		case p.Format == "date-time":
			out[name] = "2026-12-24T10:00:00Z"
		default:
			out[name] = "Ann Lee"
		}
	}
	return out
}
