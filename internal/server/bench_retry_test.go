package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/crm"
	"github.com/mrtr-wasm/mrtr-wasm/internal/server"
	"github.com/mrtr-wasm/mrtr-wasm/policy"
)

// retryPadKeys is how many extra members the padded retry's answer
// carries: enough that the passes over them stand out of the noise of a
// whole HTTP retry (about 45 KB of answers).
const retryPadKeys = 4096

// BenchmarkRetry sends one retry of book_demo_call through the server's
// HTTP handler in process (no network): the SDK's request handling, our
// body check, the guard's Resume of the contact answer and its Ask of the
// slot round, and the result's encoding. ns/op, B/op and allocs/op are
// those of the plain retry.
//
// It also counts the passes a retry makes over the answers, by measuring
// them: the same retry whose answer carries a field of retryPadKeys
// members ("note":{"p0000":"", …}; the guard drops it) is run in blocks interleaved
// with the plain one, and what the pad adds is divided by what one known
// pass over the same pad costs, measured in the same run:
//
//	decodes/retry  extra allocations ÷ those of one encoding/json decode of
//	               the padded answer content into map[string]any (a decode
//	               allocates per member; a scan or a copy does not)
//	copies/retry   extra bytes allocated ÷ the pad's bytes (a copy of the
//	               answers, or a decode's strings and map, allocates them)
//	scans/retry    extra CPU time ÷ that of one json.Valid over the padded
//	               content (every pass is at least a scan; a decode counts
//	               as several)
//
// decode-allocs/key, decode-copies and decode-scans say what one decode
// of the yardstick adds to each of the three, so that the decodes can be
// told from the copies and the scans.
//
// The ratios are per retry and hold for any pad size; the wasm engine's
// guest allocates in its own memory, which Go's counters do not see.
func BenchmarkRetry(b *testing.B) {
	for _, eng := range []struct {
		name string
		e    host.Engine
	}{{"native", host.EngineNative}, {"wasm", host.EngineWasm}} {
		b.Run(eng.name, func(b *testing.B) { benchRetry(b, eng.e) })
	}
}

func benchRetry(b *testing.B, eng host.Engine) {
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
	// The pad is one field the form did not ask for, an object of distinct
	// keys (a form's content may have at most 256 fields; one it did not
	// ask for is dropped unread).
	var pb strings.Builder
	pb.WriteString(`,"note":{`)
	for k := range retryPadKeys {
		if k > 0 {
			pb.WriteByte(',')
		}
		fmt.Fprintf(&pb, `"p%04d":""`, k)
	}
	pb.WriteByte('}')
	pad := pb.String()
	content := `{"name":"Ada Lovelace","email":"ada@example.com"`
	retry := func(pad string) string {
		answers := `{"contact":{"action":"accept","content":` + content + pad + `}}}`
		return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + meta + `,"name":"book_demo_call","arguments":{"topic":"benchmarks"},` +
			`"requestState":"` + r.Result.RequestState + `","inputResponses":` + answers + `}}`
	}
	plain, padded := retry(""), retry(pad)
	for _, body := range []string{plain, padded} {
		if w := do(body); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "When would you like the call") {
			b.Fatalf("retry: %d %s", w.Code, w.Body)
		}
	}

	// The yardsticks: one decode and one validity scan of the padded content.
	padContent := []byte(content + pad + `}`)
	decode := func() {
		var m map[string]any
		if err := json.Unmarshal(padContent, &m); err != nil || len(m) != 3 {
			b.Fatalf("reference decode: %v", err)
		}
	}
	scan := func() {
		if !json.Valid(padContent) {
			b.Fatal("pad is not JSON")
		}
	}
	decodeAllocs := testing.AllocsPerRun(20, decode)

	// Blocks of each kind, interleaved so that the machine's load drifts
	// alike over all three. The benchmark's own timer runs only over the
	// plain retries.
	type cost struct {
		n            int
		ns           int64 // this process's CPU time: what other processes take of the machine stays out
		allocs, byts uint64
	}
	cpu := func() int64 {
		var r syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r)
		return r.Utime.Nano() + r.Stime.Nano()
	}
	var plainC, paddedC, scanC, decodeC cost
	var ms runtime.MemStats
	measure := func(c *cost, n int, fn func()) {
		runtime.ReadMemStats(&ms)
		m0, b0, t0 := ms.Mallocs, ms.TotalAlloc, cpu()
		for range n {
			fn()
		}
		c.ns += cpu() - t0
		runtime.ReadMemStats(&ms)
		c.n, c.allocs, c.byts = c.n+n, c.allocs+ms.Mallocs-m0, c.byts+ms.TotalAlloc-b0
	}
	retryOnce := func(body string) func() {
		return func() {
			if w := do(body); w.Code != http.StatusOK {
				b.Fatalf("retry: %d %s", w.Code, w.Body)
			}
		}
	}
	const rounds = 10
	b.ReportAllocs()
	b.ResetTimer()
	b.StopTimer()
	for i := range rounds {
		n := b.N/rounds + min(1, max(0, b.N%rounds-i))
		if n == 0 {
			continue
		}
		b.StartTimer()
		measure(&plainC, n, retryOnce(plain))
		b.StopTimer()
		measure(&paddedC, n, retryOnce(padded))
		measure(&scanC, 10*n, scan)
		measure(&decodeC, n, decode)
	}
	if plainC.n == 0 {
		return
	}
	per := func(c cost) (ns, allocs, byts float64) {
		return float64(c.ns) / float64(c.n), float64(c.allocs) / float64(c.n), float64(c.byts) / float64(c.n)
	}
	ns0, a0, b0 := per(plainC)
	ns1, a1, b1 := per(paddedC)
	nsScan, _, _ := per(scanC)
	nsDecode, _, bDecode := per(decodeC)
	b.ReportMetric((a1-a0)/decodeAllocs, "decodes/retry")
	b.ReportMetric((b1-b0)/float64(len(pad)), "copies/retry")
	b.ReportMetric((ns1-ns0)/nsScan, "scans/retry")
	// How to read the three: what one decode allocates per key and per
	// pad byte, and how many scans its time is worth.
	b.ReportMetric(decodeAllocs/retryPadKeys, "decode-allocs/key")
	b.ReportMetric(bDecode/float64(len(pad)), "decode-copies")
	b.ReportMetric(nsDecode/nsScan, "decode-scans")
}
