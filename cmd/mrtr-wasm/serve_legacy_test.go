package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectLegacy opens an official Go SDK client session pinned to
// 2025-11-25: initialize, a session, elicitation as server-to-client
// requests.
func connectLegacy(t *testing.T, s *served, token string, caps *mcp.ClientCapabilities, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{Capabilities: caps, ElicitationHandler: elicit}
	c := mcp.NewClient(&mcp.Implementation{Name: "mrtr-legacy-e2e", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp", HTTPClient: httpClient(token)},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("negotiated %q, want 2025-11-25", v)
	}
	if cs.ID() == "" {
		t.Fatal("no Mcp-Session-Id")
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

var formCaps = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}

func bookStructured(t *testing.T, res *mcp.CallToolResult) (booked bool, msg string) {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	var sc struct {
		Booked  bool   `json:"booked"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	return sc.Booked, sc.Message
}

func TestServeLegacySessionBooking(t *testing.T) {
	s := startServe(t)
	args := map[string]any{"topic": markTopic}

	t.Run("tools are listed", func(t *testing.T) {
		cs := connectLegacy(t, s, tokAlice, formCaps, nil)
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if !strings.Contains(strings.Join(names, ","), "book_demo_call") {
			t.Fatalf("tools: %v", names)
		}
	})

	t.Run("invalid email re-asked, then booked once", func(t *testing.T) {
		var mu sync.Mutex
		var asked []string
		cs := connectLegacy(t, s, tokAlice, formCaps, func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, r.Params.Message)
			switch len(asked) {
			case 1:
				return accept(map[string]any{"name": markName, "email": "not-an-email"}), nil
			case 2:
				if !strings.Contains(strings.ToLower(r.Params.Message), "email") {
					t.Errorf("the re-ask does not name the field: %q", r.Params.Message)
				}
				return accept(map[string]any{"name": markName, "email": markEmail}), nil
			default:
				return accept(map[string]any{"slot": firstSlot(t, r.Params.RequestedSchema), "confirm": true}), nil
			}
		})
		before := len(bookings(t, cs))
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "book_demo_call", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("book_demo_call: %v %+v", err, res)
		}
		if booked, msg := bookStructured(t, res); !booked {
			t.Fatalf("not booked: %s", msg)
		}
		if len(asked) != 3 {
			t.Fatalf("want 3 elicitations (contact, contact again, slot), got %d: %q", len(asked), asked)
		}
		if got := len(bookings(t, cs)); got != before+1 {
			t.Fatalf("want one more booking, got %d -> %d", before, got)
		}
	})

	for _, action := range []string{"decline", "cancel"} {
		t.Run(action, func(t *testing.T) {
			cs := connectLegacy(t, s, tokBob, formCaps, func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: action}, nil
			})
			before := len(bookings(t, cs))
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "book_demo_call", Arguments: args})
			if err != nil || res.IsError {
				t.Fatalf("book_demo_call: %v %+v", err, res)
			}
			booked, msg := bookStructured(t, res)
			if booked || !strings.Contains(msg, map[string]string{"decline": "declined", "cancel": "cancelled"}[action]) {
				t.Fatalf("%s: booked=%v %q", action, booked, msg)
			}
			if got := len(bookings(t, cs)); got != before {
				t.Fatalf("%s wrote a booking", action)
			}
		})
	}

	t.Run("no elicitation declared", func(t *testing.T) {
		cs := connectLegacy(t, s, tokBob, &mcp.ClientCapabilities{}, nil)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "book_demo_call", Arguments: args})
		if err != nil {
			t.Fatalf("want an error result, got %v", err)
		}
		if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "did not declare") {
			t.Fatalf("want an error result saying why, got %+v", res)
		}
	})

	t.Run("the round limit holds", func(t *testing.T) {
		n := 0
		cs := connectLegacy(t, s, tokBob, formCaps, func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			n++
			return accept(map[string]any{"name": "Bob", "email": "never valid"}), nil
		})
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "book_demo_call", Arguments: args})
		if err == nil {
			t.Fatal("want an error once the rounds are used up")
		}
		if n < 2 || n > 4 {
			t.Fatalf("asked %d times; the default round limit is 3", n)
		}
	})

	t.Run("a session belongs to its principal", func(t *testing.T) {
		cs := connectLegacy(t, s, tokAlice, formCaps, nil)
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`
		req, _ := http.NewRequest(http.MethodPost, s.base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := httpClient(tokBob).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Fatalf("bob used alice's session: %d %s", resp.StatusCode, b)
		}
	})
}

func TestServeLegacySessionCap(t *testing.T) {
	s := startServe(t, "--max-sessions", "2", "--session-idle", "1m")
	connectLegacy(t, s, tokAlice, formCaps, nil)
	connectLegacy(t, s, tokBob, formCaps, nil)
	c := mcp.NewClient(&mcp.Implementation{Name: "third", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp", HTTPClient: httpClient(tokAlice), MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil {
		t.Fatal("a third session was opened past --max-sessions 2")
	}
	if !strings.Contains(err.Error(), "too many sessions") && !strings.Contains(err.Error(), "Service Unavailable") {
		t.Fatalf("want a 'too many sessions' refusal, got %v", errors.Unwrap(err))
	}
}

// TestServeLegacyStdio: a 2025-11-25 client on stdio (the first message
// is its initialize) books through elicitation on the session.
func TestServeLegacyStdio(t *testing.T) {
	dir := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- serve(ctx, []string{"--stdio", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--wasm-cache", sharedCache}, inR, outW, logs, nil)
		outW.Close()
	}()
	defer func() {
		inW.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("serve --stdio did not stop")
		}
	}()
	n := 0
	c := mcp.NewClient(&mcp.Implementation{Name: "legacy-stdio", Version: "1"}, &mcp.ClientOptions{
		Capabilities: formCaps,
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			n++
			if n == 1 {
				return accept(map[string]any{"name": "Stdio Sam", "email": "sam@example.com"}), nil
			}
			return accept(map[string]any{"slot": firstSlot(t, r.Params.RequestedSchema), "confirm": true}), nil
		},
	})
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, logs)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("negotiated %q", v)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "book_demo_call", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("book_demo_call: %v %+v", err, res)
	}
	if booked, msg := bookStructured(t, res); !booked || n != 2 {
		t.Fatalf("booked=%v after %d elicitations: %s", booked, n, msg)
	}
}
