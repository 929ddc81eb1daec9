// Command booker is a 2025-11-25 MCP server (the Go SDK) for the proxy's
// load and soak runs: its tool "book" asks the client for a name with
// elicitation/create mid-call and, once a name is accepted, records the
// booking's effect as one line ("ID NAME") appended to the -effects file,
// so that a run can count each booking's effects. "big" answers a text of
// the bytes asked for (for slow readers). It serves on stdio, or on
// Streamable HTTP with -http ADDR (the address it got is printed on
// stdout).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP on this address (default: stdio)")
	effects := flag.String("effects", "", "file each accepted booking's line is appended to")
	flag.Parse()
	if *effects == "" {
		fmt.Fprintln(os.Stderr, "booker: -effects is required")
		os.Exit(2)
	}
	f, err := os.OpenFile(*effects, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "booker:", err)
		os.Exit(1)
	}
	srv := newServer(f)
	if *addr == "" {
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "booker:", err)
		}
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "booker:", err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	if err := http.Serve(ln, h); err != nil {
		fmt.Fprintln(os.Stderr, "booker:", err)
		os.Exit(1)
	}
}

func newServer(effects *os.File) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "booker", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	var mu sync.Mutex // one line, one write: lines of concurrent bookings never interleave
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	srv.AddTool(&mcp.Tool{Name: "book", InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(r.Params.Arguments, &args) != nil || args.ID == "" || strings.ContainsAny(args.ID, " \n") {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "want an id"}}}, nil
			}
			res, err := r.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Who is it for?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)})
			if err != nil {
				// A tool error, not a JSON-RPC one: the Go SDK would
				// relabel the latter "method not found: tools/call".
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "not booked: " + err.Error()}}}, nil
			}
			name, _ := res.Content["name"].(string)
			if res.Action != "accept" || name == "" {
				return text("not booked: " + res.Action), nil
			}
			mu.Lock()
			_, err = fmt.Fprintf(effects, "%s %s\n", args.ID, strings.ReplaceAll(name, "\n", " "))
			mu.Unlock()
			if err != nil {
				return nil, err
			}
			return text("booked " + args.ID), nil
		})
	srv.AddTool(&mcp.Tool{Name: "big", InputSchema: json.RawMessage(`{"type":"object","properties":{"bytes":{"type":"integer"}}}`)},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				Bytes int `json:"bytes"`
			}
			_ = json.Unmarshal(r.Params.Arguments, &args)
			return text(strings.Repeat("x", min(max(args.Bytes, 0), 4<<20))), nil
		})
	return srv
}
