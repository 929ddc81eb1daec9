package proxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkProxyCPU is the proxy's own work per call, in process: the
// handler is called directly and the upstream answers at once with
// canned bytes, so the figures are what the proxy adds in CPU (HTTP to the
// upstream included, the client's HTTP not). For profiles:
//
//	go test ./internal/proxy -run '^$' -bench BenchmarkProxyCPU -cpuprofile cpu.out
func BenchmarkProxyCPU(b *testing.B) {
	g := newGuard(b)
	up := rpcServer(b, func(w http.ResponseWriter, body []byte) {
		switch {
		case isToolsList(body):
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[],"ttlMs":60000}}`)
		case bytes.Contains(body, []byte(`"requestState":"s1"`)):
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"content":[{"type":"text","text":"state-ok"}]}}`)
		case bytes.Contains(body, []byte(`"round"`)):
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Please confirm","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}},"requestState":"s1"}}`)
		default:
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"content":[{"type":"text","text":"This is a simple text response for testing."}]}}`)
		}
	})
	p, err := New(Config{Guard: g, Upstream: httpUpstream(b, up.URL)})
	if err != nil {
		b.Fatal(err)
	}
	h := p.Handler()
	n := 0
	do := func(name, args, extra string) []byte {
		n++
		r := toolRequest("http://127.0.0.1", int64(n), name, args, extra)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		out, _ := io.ReadAll(w.Result().Body)
		if w.Code != 200 {
			b.Fatalf("HTTP %d %s", w.Code, out)
		}
		return out
	}
	b.Run("tools_call", func(b *testing.B) {
		defer cpuPerOp(b)()
		for i := 0; i < b.N; i++ {
			do("t", `{}`, "")
		}
	})
	b.Run("input_round", func(b *testing.B) {
		defer cpuPerOp(b)()
		for i := 0; i < b.N; i++ {
			r := do("r", `{"round":1}`, "")
			st := stateRE.FindSubmatch(r)
			if st == nil {
				b.Fatalf("%s", r)
			}
			r = do("r", `{"round":1}`, `,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":"`+string(st[1])+`"`)
			if !bytes.Contains(r, []byte("state-ok")) {
				b.Fatalf("%s", r)
			}
		}
	})
}

// cpuPerOp reports the process's CPU time per op (both the proxy's and
// the canned upstream's, user and system): less sensitive to a loaded
// machine than ns/op, which also counts the time the process waited for
// a CPU.
func cpuPerOp(b *testing.B) func() {
	start := selfCPU()
	return func() {
		b.ReportMetric(float64((selfCPU()-start).Microseconds())/float64(b.N), "cpu-µs/op")
	}
}
