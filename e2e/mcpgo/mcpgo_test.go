package mcpgo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// calls records what reached the mcp-go server's tool handlers.
type calls struct {
	mu  sync.Mutex
	got []string
}

func (c *calls) add(s string) {
	c.mu.Lock()
	c.got = append(c.got, s)
	c.mu.Unlock()
}

func (c *calls) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.got
	c.got = nil
	return out
}

// newUpstream is an unguarded mcp-go server: two tools that only record
// that they ran, and one that asks for a confirmation (MRTR) and records
// the requestState it is retried with.
func newUpstream(t *testing.T, rec *calls) string {
	s := server.NewMCPServer("mcp-go-upstream", "1.0.0", server.WithToolCapabilities(false))
	record := func(name string) server.ToolHandlerFunc {
		return func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			rec.add(name)
			return mcp.NewToolResultText(name + " ran"), nil
		}
	}
	s.AddTool(mcp.NewTool("list_bookings"), record("list_bookings"))
	s.AddTool(mcp.NewTool("delete_account"), record("delete_account"))
	s.AddTool(mcp.NewTool("book"), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if st := r.Params.RequestState; st != "" {
			rec.add("book with state " + st)
			return mcp.NewToolResultText("booked"), nil
		}
		return server.NewInputRequestBuilder("round=1").Elicit("confirm", mcp.ElicitationParams{
			Message:         "Book it?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}, "required": []string{"ok"}},
		}).ToolResult(), nil
	})
	hs := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// startProxy builds mrtr-wasm and runs `mrtr-wasm proxy` in front of up.
func startProxy(t *testing.T, up string) string {
	bin := filepath.Join(t.TempDir(), "mrtr-wasm")
	build := exec.Command("go", "build", "-o", bin, "./cmd/mrtr-wasm")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building mrtr-wasm: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "proxy", "--addr", "127.0.0.1:0", "--upstream", up)
	cmd.Env = append(os.Environ(), "MRTR_KEYS=")
	out, _ := cmd.StderrPipe()
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := regexp.MustCompile(`"mcp":"(http://127\.0\.0\.1:\d+/mcp)"`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := addr.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
			t.Log("proxy: " + sc.Text())
		}
	}()
	select {
	case u := <-found:
		return u
	case <-time.After(2 * time.Minute):
		t.Fatal("the proxy did not start")
		return ""
	}
}

type rpcResult struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// call posts a 2026-07-28 tools/call to url; extra is spliced into params.
func call(t *testing.T, url, name, extra string) rpcResult {
	t.Helper()
	return callHeader(t, url, name, name, extra)
}

// callHeader is call with another Mcp-Name header than the name.
func callHeader(t *testing.T, url, name, header, extra string) rpcResult {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":{}` + extra +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}}}`
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", header)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range bytes.Split(b, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok && bytes.Contains(d, []byte(`"id"`)) {
				b = d
			}
		}
	}
	var r rpcResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("HTTP %d, not JSON-RPC: %s", resp.StatusCode, b)
	}
	return r
}
