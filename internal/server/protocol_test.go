package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/crm"
	"github.com/mrtr-wasm/mrtr-wasm/internal/identity"
	"github.com/mrtr-wasm/mrtr-wasm/internal/server"
	"github.com/mrtr-wasm/mrtr-wasm/policy"
)

// newTestServer runs the real server (guard.wasm, the shipped policy, a
// SQLite CRM) behind httptest.
func newTestServer(t testing.TB, auth *identity.Authenticator, edits ...func(*server.Config)) (*httptest.Server, *crm.Store) {
	t.Helper()
	cfg := server.Config{Auth: auth}
	for _, edit := range edits {
		edit(&cfg)
	}
	return newTestServerWith(t, cfg)
}

// newTestServerWith fills cfg's guard, CRM and public URL.
func newTestServerWith(t testing.TB, cfg server.Config) (*httptest.Server, *crm.Store) {
	t.Helper()
	store := newStore(t)
	ts := httptest.NewUnstartedServer(nil)
	ts.Start()
	if cfg.Guard == nil {
		cfg.Guard = newGuard(t)
	}
	cfg.CRM, cfg.PublicURL = store, ts.URL
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = s.Handler()
	t.Cleanup(ts.Close)
	return ts, store
}

func newGuard(t testing.TB) *host.Guard {
	t.Helper()
	ctx := context.Background()
	pol, err := policy.Default(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g, err := host.New(ctx, host.WithKeys(host.NewKeyring()), host.WithPolicy(pol),
		host.WithCompilationCache(filepath.Join(os.TempDir(), "mrtr-wasm-test-cache")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(ctx) })
	return g
}

func newStore(t testing.TB) *crm.Store {
	t.Helper()
	store, err := crm.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "crm.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

const caps = `{"elicitation":{"form":{},"url":{}}}`

func meta(version, capabilities string) string {
	m := map[string]json.RawMessage{}
	if version != "" {
		m["io.modelcontextprotocol/protocolVersion"] = json.RawMessage(`"` + version + `"`)
	}
	if capabilities != "" {
		m["io.modelcontextprotocol/clientCapabilities"] = json.RawMessage(capabilities)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

type rpcResp struct {
	status int
	ID     json.RawMessage            `json:"id"`
	Result map[string]json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	raw string
}

func post(t *testing.T, url string, headers map[string]string, body string) rpcResp {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := rpcResp{status: resp.StatusCode, raw: string(b)}
	_ = json.Unmarshal(b, &r)
	return r
}

func std(method, name string) map[string]string {
	h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

func TestProtocol(t *testing.T) {
	ts, _ := newTestServer(t, nil)
	u := ts.URL + "/mcp"
	callBody := func(m, name string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":` + m + `,"name":"` + name + `","arguments":{}}}`
	}
	good := meta("2026-07-28", caps)

	cases := []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		code    int
	}{
		{"missing _meta", std("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, 400, -32602},
		{"missing _meta, no version header", map[string]string{"Mcp-Method": "tools/list"}, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, 400, -32602},
		{"missing clientCapabilities", std("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":` + meta("2026-07-28", "") + `}}`, 400, -32602},
		{"missing protocolVersion", std("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":` + meta("", caps) + `}}`, 400, -32602},
		{"older version header", map[string]string{"MCP-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/list"}, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":` + good + `}}`, 400, -32022},
		{"version header differs from _meta", std("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":` + meta("2025-11-25", caps) + `}}`, 400, -32020},
		{"version header missing", map[string]string{"Mcp-Method": "tools/list"}, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":` + good + `}}`, 400, -32020},
		{"Mcp-Method differs", std("tools/call", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":` + good + `}}`, 400, -32020},
		{"Mcp-Method missing", map[string]string{"MCP-Protocol-Version": "2026-07-28"}, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":` + good + `}}`, 400, -32020},
		{"Mcp-Name differs", std("tools/call", "list_bookings"), callBody(good, "book_demo_call"), 400, -32020},
		{"Mcp-Name missing", std("tools/call", ""), callBody(good, "book_demo_call"), 400, -32020},
		{"Mcp-Name base64 malformed", std("tools/call", "=?base64?***?="), callBody(good, "book_demo_call"), 400, -32020},
		{"Mcp-Name base64 of another name", std("tools/call", "=?base64?"+base64.StdEncoding.EncodeToString([]byte("list_bookings"))+"?="), callBody(good, "book_demo_call"), 400, -32020},
		{"Mcp-Name base64 matches", std("tools/call", "=?base64?"+base64.StdEncoding.EncodeToString([]byte("book_demo_call"))+"?="), callBody(good, "book_demo_call"), 200, 0},
		{"unsupported version", map[string]string{"MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list"}, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":` + meta("2099-01-01", caps) + `}}`, 400, -32022},
		{"initialize sent as 2026-07-28", std("initialize", ""), `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"_meta":` + good + `}}`, 404, -32601},
		{"unknown method", std("nope/nothing", ""), `{"jsonrpc":"2.0","id":1,"method":"nope/nothing","params":{"_meta":` + good + `}}`, 404, -32601},
		{"form without the capability", std("tools/call", "book_demo_call"), callBody(meta("2026-07-28", `{}`), "book_demo_call"), 400, -32021},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := post(t, u, c.headers, c.body)
			if r.status != c.status {
				t.Fatalf("HTTP %d, want %d: %s", r.status, c.status, r.raw)
			}
			if c.code != 0 && (r.Error == nil || r.Error.Code != c.code) {
				t.Fatalf("want JSON-RPC %d: %s", c.code, r.raw)
			}
			// Every error carries the request's id.
			var req struct{ ID json.RawMessage }
			_ = json.Unmarshal([]byte(c.body), &req)
			if c.code != 0 && string(r.ID) != string(req.ID) {
				t.Fatalf("error id %s, want %s: %s", r.ID, req.ID, r.raw)
			}
		})
	}

	t.Run("resultType on every result; input_required only from tools/call", func(t *testing.T) {
		for _, m := range []string{"server/discover", "tools/list", "prompts/list"} {
			r := post(t, u, std(m, ""), `{"jsonrpc":"2.0","id":1,"method":"`+m+`","params":{"_meta":`+good+`}}`)
			if r.status != 200 || string(r.Result["resultType"]) != `"complete"` {
				t.Fatalf("%s: %d %s", m, r.status, r.raw)
			}
		}
		r := post(t, u, std("tools/call", "book_demo_call"), callBody(good, "book_demo_call"))
		if string(r.Result["resultType"]) != `"input_required"` || len(r.Result["requestState"]) == 0 {
			t.Fatalf("book_demo_call: %s", r.raw)
		}
		r = post(t, u, std("tools/call", "list_bookings"), callBody(good, "list_bookings"))
		if string(r.Result["resultType"]) != `"complete"` {
			t.Fatalf("list_bookings: %s", r.raw)
		}
		var d struct {
			SupportedVersions []string `json:"supportedVersions"`
		}
		r = post(t, u, std("server/discover", ""), `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":`+good+`}}`)
		b, _ := json.Marshal(r.Result)
		_ = json.Unmarshal(b, &d)
		if len(d.SupportedVersions) != 1 || d.SupportedVersions[0] != "2026-07-28" {
			t.Fatalf("discover: %s", r.raw)
		}
	})

	t.Run("capabilities are read per request", func(t *testing.T) {
		// URL mode declared on one request does not carry to the next.
		r := post(t, u, std("tools/call", "connect_calendar"), callBody(meta("2026-07-28", `{"elicitation":{"url":{}}}`), "connect_calendar"))
		if string(r.Result["resultType"]) != `"input_required"` {
			t.Fatalf("with url: %s", r.raw)
		}
		r = post(t, u, std("tools/call", "connect_calendar"), callBody(meta("2026-07-28", `{"elicitation":{"form":{}}}`), "connect_calendar"))
		if r.Error == nil || r.Error.Code != -32021 {
			t.Fatalf("form only: want -32021, got %s", r.raw)
		}
	})

	t.Run("bodies over 1 MiB are refused", func(t *testing.T) {
		big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":` + good + `,"name":"book_demo_call","arguments":{"topic":"` + strings.Repeat("a", 1<<20) + `"}}}`
		r := post(t, u, std("tools/call", "book_demo_call"), big)
		if r.status != http.StatusRequestEntityTooLarge {
			t.Fatalf("HTTP %d, want 413", r.status)
		}
	})

	t.Run("healthz and metrics", func(t *testing.T) {
		for path, want := range map[string]string{"/healthz": `"ok"`, "/metrics": "mrtr_guard_seconds_bucket"} {
			resp, err := http.Get(ts.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
				t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
			}
		}
	})
}

// TestRepeatedMCPHeadersRefused: two Mcp-Name (or Mcp-Method) headers are
// refused: the server read the first, and an intermediary that routes on
// the last would have seen another tool.
func TestRepeatedMCPHeadersRefused(t *testing.T) {
	ts, _ := newTestServer(t, nil)
	body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_bookings","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	for _, h := range []string{"Mcp-Name", "Mcp-Method"} {
		req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "list_bookings")
		req.Header.Add(h, map[string]string{"Mcp-Name": "book_demo_call", "Mcp-Method": "tools/list"}[h])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "-32020") || !strings.Contains(string(b), "repeated") {
			t.Errorf("two %s headers: HTTP %d %s", h, resp.StatusCode, b)
		}
	}
}
