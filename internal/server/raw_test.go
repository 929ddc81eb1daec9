package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/observe"
	"github.com/mrtr-wasm/mrtr-wasm/internal/server"
)

const contactOK = `{"contact":{"action":"accept","content":{"name":"Ann Lee","email":"ann@example.com"}}}`

// answerCases are retries whose bytes the SDK's decoding would smooth
// over: each must be refused with -32602 by the check of the bytes sent.
var answerCases = []struct {
	name, params string // params members after _meta, name and requestState
}{
	{"duplicate key in an answer", `"arguments":{},"inputResponses":{"contact":{"action":"accept","content":{"name":"Ann","name":"Eve","email":"ann@example.com"}}}`},
	{"case-variant keys in an answer", `"arguments":{},"inputResponses":{"contact":{"action":"accept","content":{"name":"Ann","Name":"Eve","email":"ann@example.com"}}}`},
	{"duplicate response key", `"arguments":{},"inputResponses":{"contact":{"action":"decline"},"contact":{"action":"accept","content":{"name":"Ann","email":"ann@example.com"}}}`},
	{"inputResponses twice", `"arguments":{},"inputResponses":{"contact":{"action":"decline"}},"inputResponses":` + contactOK},
	{"inputResponses and a case variant", `"arguments":{},"inputResponses":` + contactOK + `,"InputResponses":{"contact":{"action":"decline"}}`},
	{"arguments twice", `"arguments":{},"arguments":{"topic":"x"},"inputResponses":` + contactOK},
	{"duplicate key in the arguments", `"arguments":{"topic":"a","topic":"b"},"inputResponses":` + contactOK},
}

func retryBody(id int, state, rest string) string {
	return `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"_meta":` + meta("2026-07-28", caps) +
		`,"name":"book_demo_call","requestState":"` + state + `",` + rest + `}}`
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestAnswersCheckedAsSentHTTP: duplicate and case-variant keys and number
// literals in what the client sent reach the guard's strict parser.
func TestAnswersCheckedAsSentHTTP(t *testing.T) {
	ts, _ := newTestServer(t, nil)
	u := ts.URL + "/mcp"
	first := post(t, u, std("tools/call", "book_demo_call"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":`+meta("2026-07-28", caps)+`,"name":"book_demo_call","arguments":{}}}`)
	var state string
	if err := json.Unmarshal(first.Result["requestState"], &state); err != nil || state == "" {
		t.Fatalf("first call: %s", first.raw)
	}
	for i, c := range answerCases {
		t.Run(c.name, func(t *testing.T) {
			r := post(t, u, std("tools/call", "book_demo_call"), retryBody(100+i, state, c.params))
			if r.Error == nil || r.Error.Code != -32602 || string(r.ID) != itoa(100+i) {
				t.Fatalf("want -32602 with id %d, got HTTP %d %s", 100+i, r.status, r.raw)
			}
		})
	}
	// The same state and a well-formed answer go through: the refusals
	// above were about the bytes.
	r := post(t, u, std("tools/call", "book_demo_call"), retryBody(99, state, `"arguments":{},"inputResponses":`+contactOK))
	if string(r.Result["resultType"]) != `"input_required"` || !strings.Contains(r.raw, "When would you like the call") {
		t.Fatalf("well-formed retry: %s", r.raw)
	}
}

// stdioServer serves cfg's server over CheckStdio on pipes and returns a
// function that sends one line and reads the answer.
func stdioServer(t *testing.T, cfg server.Config) func(msg string) rpcResp {
	t.Helper()
	if cfg.Guard == nil {
		cfg.Guard = newGuard(t)
	}
	cfg.CRM, cfg.PublicURL = newStore(t), "http://127.0.0.1:1"
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.MCP().Run(ctx, server.CheckStdio(&mcp.IOTransport{Reader: inR, Writer: outW}))
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("stdio server did not stop")
		}
	})
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	return func(msg string) rpcResp {
		t.Helper()
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatalf("no answer (%v) to %.200s", lines.Err(), msg)
		}
		r := rpcResp{raw: lines.Text()}
		if err := json.Unmarshal(lines.Bytes(), &r); err != nil {
			t.Fatalf("not JSON-RPC: %q", lines.Text())
		}
		return r
	}
}

const firstCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}},"name":"book_demo_call","arguments":{}}}`

func stateOf(t *testing.T, r rpcResp) string {
	t.Helper()
	var state string
	if err := json.Unmarshal(r.Result["requestState"], &state); err != nil || state == "" {
		t.Fatalf("no requestState: %s", r.raw)
	}
	return state
}

// TestAnswersCheckedAsSentStdio: the same over stdio.
func TestAnswersCheckedAsSentStdio(t *testing.T) {
	rpc := stdioServer(t, server.Config{})
	state := stateOf(t, rpc(firstCall))
	for i, c := range answerCases {
		r := rpc(retryBody(100+i, state, c.params))
		if r.Error == nil || r.Error.Code != -32602 || string(r.ID) != itoa(100+i) {
			t.Errorf("%s: want -32602 with id %d, got %s", c.name, 100+i, r.raw)
		}
	}
	r := rpc(retryBody(99, state, `"arguments":{},"inputResponses":`+contactOK))
	if string(r.Result["resultType"]) != `"input_required"` {
		t.Fatalf("well-formed retry: %s", r.raw)
	}
}

// recorder passes every call to the real guard and keeps what it was given.
type recorder struct {
	observe.Guard
	mu  sync.Mutex
	got []host.Request
}

func (r *recorder) Resume(ctx context.Context, req *host.Request) (*host.Outcome, error) {
	r.mu.Lock()
	r.got = append(r.got, *req)
	r.mu.Unlock()
	return r.Guard.Resume(ctx, req)
}

// TestGuardGetsTheBytesSent: arguments, answers and capabilities reach the
// guard byte for byte, number literals and spacing included, over HTTP and
// stdio.
func TestGuardGetsTheBytesSent(t *testing.T) {
	const (
		args    = `{ "topic" : "Q3\u0020plans" }`
		answers = `{"contact":{"action":"accept","content":{"name":"Ann Lee","email":"ann@example.com","seats":1.50E+2,"big":12345678901234567890123}}}`
		capsRaw = `{"elicitation" : {"form":{ }}}`
	)
	body := func(state string) string {
		return `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + capsRaw +
			`},"name":"book_demo_call","arguments":` + args + `,"requestState":"` + state + `","inputResponses":` + answers + `}}`
	}
	check := func(t *testing.T, rec *recorder, r rpcResp) {
		if string(r.Result["resultType"]) != `"input_required"` {
			t.Fatalf("retry: %s", r.raw)
		}
		if len(rec.got) != 1 {
			t.Fatalf("%d resumes", len(rec.got))
		}
		g := rec.got[0]
		if string(g.Arguments) != args || string(g.InputResponses) != answers || string(g.Capabilities) != capsRaw {
			t.Fatalf("the guard got other bytes:\n%s\n%s\n%s", g.Arguments, g.InputResponses, g.Capabilities)
		}
	}
	t.Run("http", func(t *testing.T) {
		rec := &recorder{Guard: newGuard(t)}
		ts, _ := newTestServerWith(t, server.Config{Guard: rec})
		u := ts.URL + "/mcp"
		first := post(t, u, std("tools/call", "book_demo_call"), strings.Replace(firstCall, `"arguments":{}`, `"arguments":`+args, 1))
		check(t, rec, post(t, u, std("tools/call", "book_demo_call"), body(stateOf(t, first))))
	})
	t.Run("stdio", func(t *testing.T) {
		rec := &recorder{Guard: newGuard(t)}
		rpc := stdioServer(t, server.Config{Guard: rec})
		first := rpc(strings.Replace(firstCall, `"arguments":{}`, `"arguments":`+args, 1))
		check(t, rec, rpc(body(stateOf(t, first))))
	})
}
