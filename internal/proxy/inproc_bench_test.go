package proxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

// BenchmarkProxyCPU is the proxy's own work per call, in process: the
// handler is called directly and the upstream answers at once with
// canned bytes, so the figures are what the proxy adds in CPU (HTTP to the
// upstream included, the client's HTTP not). MRTR_BENCH_ENGINE=native
// runs the core compiled in. For profiles:
//
//	go test ./internal/proxy -run '^$' -bench BenchmarkProxyCPU -cpuprofile cpu.out
func BenchmarkProxyCPU(b *testing.B) {
	var opts []host.Option
	if os.Getenv("MRTR_BENCH_ENGINE") == "native" {
		opts = append(opts, host.WithEngine(host.EngineNative))
	}
	g := newGuard(b, opts...)
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

// BenchmarkProxyHop is one plain tools/call over loopback HTTP on every
// side, in one process: to the upstream directly, through a bare Go
// reverse proxy (read the body, forward it with the headers, copy the
// answer back), and through the proxy. cpu-µs/op, all three sides
// counted, is steadier than the wall clock on a shared VM, and the bare
// proxy is the floor an extra HTTP hop costs.
//
//	go test ./internal/proxy -run '^$' -bench BenchmarkProxyHop -benchtime 20000x -benchmem
func BenchmarkProxyHop(b *testing.B) {
	up := rpcServer(b, func(w http.ResponseWriter, body []byte) {
		if isToolsList(body) {
			writeJSON(w, `{"jsonrpc":"2.0","id":`+idOf(body)+`,"result":{"tools":[],"ttlMs":60000}}`)
			return
		}
		// As the go-sdk answers: one event on a stream.
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message\ndata: "+`{"jsonrpc":"2.0","id":`+idOf(body)+
			`,"result":{"content":[{"type":"text","text":"This is a simple text response for testing."}]}}`+"\n\n")
	})
	p, err := New(Config{Guard: newGuard(b), Upstream: httpUpstream(b, up.URL)})
	if err != nil {
		b.Fatal(err)
	}
	ours := httptest.NewServer(p.Handler())
	b.Cleanup(ours.Close)
	uc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequestWithContext(r.Context(), "POST", up.URL, bytes.NewReader(body))
		for k, v := range r.Header {
			req.Header[k] = v
		}
		resp, err := uc.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		_, _ = w.Write(out)
	}))
	b.Cleanup(bare.Close)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for _, t := range []struct{ name, url string }{{"direct", up.URL}, {"bare_proxy", bare.URL}, {"proxy", ours.URL}} {
		b.Run(t.name, func(b *testing.B) {
			call := func(i int) {
				resp, err := c.Do(toolRequest(t.url, int64(i), "t", `{}`, ""))
				if err != nil {
					b.Fatal(err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !bytes.Contains(out, []byte("simple text response")) {
					b.Fatalf("%s", out)
				}
			}
			for i := 0; i < 200; i++ {
				call(i)
			}
			b.ResetTimer()
			defer cpuPerOp(b)()
			for i := 0; i < b.N; i++ {
				call(i)
			}
		})
	}
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
