package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/crm"
	"github.com/mrtr-wasm/mrtr-wasm/internal/server"
	"github.com/mrtr-wasm/mrtr-wasm/policy"
)

// BenchmarkRetry sends one retry of book_demo_call through the server's
// HTTP handler in process (no network): the SDK's request handling, the
// body check, the guard's Resume of the contact answer and its Ask of the
// slot round, and the result's encoding. pad is an extra answer field of
// that many bytes (the guard drops it): the cost per answer byte shows how
// many passes the answers get.
func BenchmarkRetry(b *testing.B) {
	for _, eng := range []struct {
		name string
		e    host.Engine
	}{{"native", host.EngineNative}, {"wasm", host.EngineWasm}} {
		for _, pad := range []int{0, 16 << 10} {
			b.Run(eng.name+"/pad="+strconv.Itoa(pad), func(b *testing.B) { benchRetry(b, eng.e, pad) })
		}
	}
}

func benchRetry(b *testing.B, eng host.Engine, pad int) {
	ctx := context.Background()
	pol, err := policy.Default(ctx)
	if err != nil {
		b.Fatal(err)
	}
	g, err := host.New(ctx, host.WithKeys(host.NewKeyring()), host.WithPolicy(pol), host.WithEngine(eng), host.WithPoolSize(1),
		host.WithCompilationCache(filepath.Join(b.TempDir(), "cache")))
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close(ctx)
	store, err := crm.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "crm.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	s, err := server.New(server.Config{Guard: g, CRM: store, PublicURL: "http://127.0.0.1:1"})
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`
	do := func(body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "http://127.0.0.1/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "book_demo_call")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	first := do(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"book_demo_call","arguments":{"topic":"benchmarks"}}}`)
	var r struct {
		Result struct {
			RequestState string `json:"requestState"`
		} `json:"result"`
	}
	if err := json.Unmarshal(first.Body.Bytes(), &r); err != nil || r.Result.RequestState == "" {
		b.Fatalf("first call: %s", first.Body)
	}
	answers := `{"contact":{"action":"accept","content":{"name":"Ada Lovelace","email":"ada@example.com","note":"` + strings.Repeat("x", pad) + `"}}}`
	retry := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + meta + `,"name":"book_demo_call","arguments":{"topic":"benchmarks"},` +
		`"requestState":"` + r.Result.RequestState + `","inputResponses":` + answers + `}}`
	if w := do(retry); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "When would you like the call") {
		b.Fatalf("retry: %d %s", w.Code, w.Body)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if w := do(retry); w.Code != http.StatusOK {
			b.Fatalf("retry: %d %s", w.Code, w.Body)
		}
	}
}
