package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/rawjson"
	"github.com/mrtr-wasm/mrtr-wasm/internal/telemetry"
	"github.com/mrtr-wasm/mrtr-wasm/internal/upstream/stdiotest"
)

// logs is a slog handler that keeps every record for assertions.
type logs struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.recs = append(l.recs, r.Clone())
	l.mu.Unlock()
	return nil
}
func (l *logs) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logs) WithGroup(string) slog.Handler      { return l }

func (l *logs) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r.Message == msg {
			n++
		}
	}
	return n
}

func (l *logs) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, r := range l.recs {
		b.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
		b.WriteByte('\n')
	}
	return b.String()
}

func childConfig(t testing.TB, mode string, extraEnv ...string) (StdioConfig, *logs) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l := &logs{}
	return StdioConfig{
		Command: exe, Args: []string{"-test.run=^$"},
		Env:    append([]string{stdiotest.Env + "=" + mode}, extraEnv...),
		Logger: slog.New(l), StartTimeout: 10 * time.Second,
		RestartBackoff: 20 * time.Millisecond, ShutdownGrace: 500 * time.Millisecond,
	}, l
}

func startChild(t testing.TB, cfg StdioConfig) *Stdio {
	t.Helper()
	s, err := NewStdio(context.Background(), cfg)
	if err != nil {
		t.Fatalf("NewStdio: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func toolCall(id, name string, args any, meta string) []byte {
	a, _ := json.Marshal(args)
	if meta == "" {
		meta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	}
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":%s}}`, id, name, a, meta)
}

type toolResult struct {
	ID     json.RawMessage `json:"id"`
	Result struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Structured map[string]json.RawMessage `json:"structuredContent"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decode(t testing.TB, raw []byte) toolResult {
	t.Helper()
	var r toolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("response %q: %v", raw, err)
	}
	return r
}

func wantCode(t *testing.T, err error, code string) *Error {
	t.Helper()
	e, ok := AsError(err)
	if !ok || e.Code != code {
		t.Fatalf("want an upstream error %s, got %v", code, err)
	}
	return e
}

// Concurrent calls that all use the same client id and progress token
// never collide: each gets its own answer and its own progress, under the
// id and token it sent.
func TestStdioMultiplexesConcurrentCalls(t *testing.T) {
	cfg, _ := childConfig(t, "ok")
	s := startChild(t, cfg)
	const n = 40
	var wg sync.WaitGroup
	seen := make(chan string, n)
	for i := range n {
		wg.Go(func() {
			meta := `{"progressToken":"tok","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
			var got [][]byte
			raw, err := s.Call(context.Background(), toolCall(`"1"`, "echo", map[string]int{"i": i}, meta), nil, func(b []byte) error {
				got = append(got, b)
				return nil
			})
			if err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
			r := decode(t, raw)
			if string(r.ID) != `"1"` || !bytes.Contains(r.Result.Structured["arguments"], fmt.Appendf(nil, `"i":%d`, i)) {
				t.Errorf("call %d got %s", i, raw)
			}
			var meta2 map[string]any
			_ = json.Unmarshal(r.Result.Structured["meta"], &meta2)
			if meta2["progressToken"] == "tok" || meta2["io.modelcontextprotocol/protocolVersion"] != "2026-07-28" {
				t.Errorf("the child saw the client's token or lost _meta: %v", meta2)
			}
			seen <- string(r.Result.Structured["id"])
			// Progress goes to the call it belongs to, with the client's token.
			var prog [][]byte
			raw, err = s.Call(context.Background(), toolCall(`7`, "progress", nil, meta), nil, func(b []byte) error {
				prog = append(prog, b)
				return nil
			})
			if err != nil || string(decode(t, raw).ID) != "7" {
				t.Errorf("progress call: %s, %v", raw, err)
			}
			if len(prog) != 3 || !bytes.Contains(prog[2], []byte(`"progressToken":"tok"`)) || !bytes.Contains(prog[2], []byte(`"progress":3`)) {
				t.Errorf("progress messages: %q", prog)
			}
		})
	}
	wg.Wait()
	close(seen)
	ids := map[string]bool{}
	for id := range seen {
		if ids[id] {
			t.Errorf("the child saw id %s twice", id)
		}
		ids[id] = true
	}
}

func TestStdioTraceparentInMeta(t *testing.T) {
	cfg, _ := childConfig(t, "ok")
	s := startChild(t, cfg)
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	raw, err := s.Call(context.Background(), toolCall("3", "echo", map[string]any{}, ""), http.Header{"Traceparent": {tp}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	_ = json.Unmarshal(decode(t, raw).Result.Structured["meta"], &meta)
	if meta["traceparent"] != tp || meta["io.modelcontextprotocol/protocolVersion"] != "2026-07-28" {
		t.Fatalf("the child's _meta: %v", meta)
	}
}

func TestStdioLegacyChildAnswersInitialize(t *testing.T) {
	cfg, l := childConfig(t, "legacy")
	s := startChild(t, cfg)
	res, legacy := s.Discovery()
	if !legacy || !bytes.Contains(res, []byte(`"protocolVersion":"2025-11-25"`)) {
		t.Fatalf("Discovery: %s, legacy %v", res, legacy)
	}
	if l.count("upstream does not answer server/discover; it answered the legacy initialize") != 1 {
		t.Errorf("no warning about the legacy child:\n%s", l.text())
	}
	if _, err := s.Call(context.Background(), toolCall("1", "echo", nil, ""), nil, nil); err != nil {
		t.Fatal(err)
	}
	cfg, _ = childConfig(t, "ok")
	s = startChild(t, cfg)
	if res, legacy := s.Discovery(); legacy || !bytes.Contains(res, []byte(`"supportedVersions":["2026-07-28"]`)) {
		t.Fatalf("Discovery of a 2026 child: %s, legacy %v", res, legacy)
	}
}

func TestStdioStartTimeout(t *testing.T) {
	cfg, _ := childConfig(t, "nodiscover")
	cfg.StartTimeout = 300 * time.Millisecond
	t0 := time.Now()
	_, err := NewStdio(context.Background(), cfg)
	e := wantCode(t, err, CodeTimeout)
	if !strings.Contains(e.Message, "server/discover within 300ms") || time.Since(t0) > 5*time.Second {
		t.Fatalf("%v after %s", err, time.Since(t0))
	}
	// A slow start within the timeout is fine.
	cfg, _ = childConfig(t, "slowstart")
	cfg.StartTimeout = 10 * time.Second
	startChild(t, cfg)
	// A command that does not exist fails at once.
	cfg.Command = filepath.Join(t.TempDir(), "no-such-server")
	wantCode(t, func() error { _, err := NewStdio(context.Background(), cfg); return err }(), CodeUnavailable)
}

// sleeping starts a call that the child answers only after 20 s.
func sleeping(s *Stdio) chan error {
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), toolCall("1", "sleep", map[string]int{"ms": 20000}, ""), nil, nil)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	return done
}

func servedAfterRestart(t *testing.T, s *Stdio) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Call(ctx, toolCall("3", "echo", nil, ""), nil, nil); err != nil {
		t.Fatalf("the next call after a restart: %v", err)
	}
}

func pidOf(t *testing.T, s *Stdio) int {
	t.Helper()
	raw, err := s.Call(context.Background(), toolCall("1", "pid", nil, ""), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	_ = json.Unmarshal(decode(t, raw).Result.Structured["pid"], &pid)
	return pid
}

// A child killed mid-call: every call in flight fails at once with a
// retryable error, the child restarts, and the next call is served.
func TestStdioCrashMidCall(t *testing.T) {
	cfg, l := childConfig(t, "ok")
	s := startChild(t, cfg)
	pid := pidOf(t, s)
	slow := sleeping(s)
	t0 := time.Now()
	_, err := s.Call(context.Background(), toolCall("2", "die", nil, ""), nil, nil)
	e := wantCode(t, err, CodeUnavailable)
	if !e.Retryable() {
		t.Fatal("a crash must be retryable")
	}
	select {
	case err := <-slow:
		wantCode(t, err, CodeUnavailable)
	case <-time.After(3 * time.Second):
		t.Fatal("the call in flight did not fail when the child died")
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Fatalf("calls failed %s after the crash", d)
	}
	servedAfterRestart(t, s)
	if pid2 := pidOf(t, s); pid2 == pid {
		t.Fatal("not a new process")
	}
	if s.Health() != nil {
		t.Fatalf("Health after a restart: %v", s.Health())
	}
	if !strings.Contains(l.text(), "child: dying mid-call") {
		t.Errorf("the child's stderr is not in the log:\n%s", l.text())
	}
}

func TestStdioKilledFromOutside(t *testing.T) {
	cfg, _ := childConfig(t, "ok")
	s := startChild(t, cfg)
	pid := pidOf(t, s)
	slow := sleeping(s)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	select {
	case err := <-slow:
		wantCode(t, err, CodeUnavailable)
	case <-time.After(3 * time.Second):
		t.Fatal("the call in flight did not fail when the child was killed")
	}
	servedAfterRestart(t, s)
}

// A call that comes once the proxy knows the child died (the call in
// flight has failed) waits for the next child and is served by it: none
// fails with "exited" for coming before the restart. Before, a call in
// the moment between the failed call and the supervisor's waking got the
// dead child.
func TestStdioCallsAfterACrashWait(t *testing.T) {
	cfg, _ := childConfig(t, "ok")
	cfg.CrashLoop, cfg.MaxBackoff = 100, 50*time.Millisecond
	s := startChild(t, cfg)
	for i := 0; i < 20; i++ {
		old := pidOf(t, s)
		inFlight := make(chan error, 1)
		go func() {
			_, err := s.Call(context.Background(), toolCall("1", "sleep", map[string]int{"ms": 20000}, ""), nil, nil)
			inFlight <- err
		}()
		time.Sleep(20 * time.Millisecond)
		_ = syscall.Kill(old, syscall.SIGKILL)
		wantCode(t, <-inFlight, CodeUnavailable)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		raw, err := s.Call(ctx, toolCall("9", "pid", nil, ""), nil, nil)
		cancel()
		if err != nil {
			t.Fatalf("kill %d: the call after the failed one: %v", i, err)
		}
		var pid int
		_ = json.Unmarshal(decode(t, raw).Result.Structured["pid"], &pid)
		if pid == old || pid == 0 {
			t.Fatalf("kill %d: answered by pid %d, the killed one was %d", i, pid, old)
		}
	}
}

// A call that took the child just before it died gets a notSent error
// (nothing was written, so Call hands the request to the next child);
// the error is still the retryable unavailable one.
func TestStdioDeadChildCallNotSent(t *testing.T) {
	cfg, _ := childConfig(t, "ok")
	s := startChild(t, cfg)
	c, err := s.current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(c.pid, syscall.SIGKILL)
	<-c.exited
	m, err := parseMessage(toolCall("5", "echo", nil, ""))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.call(context.Background(), m, "", nil)
	var ns *notSent
	if !errors.As(err, &ns) {
		t.Fatalf("a call on the dead child: %v, want notSent", err)
	}
	if e := wantCode(t, err, CodeUnavailable); !e.Retryable() {
		t.Fatalf("not retryable: %v", e)
	}
	servedAfterRestart(t, s)
}

// A child that keeps dying on start: the restarts stop at the cap, Health
// says so, and calls fail at once.
func TestStdioCrashLoop(t *testing.T) {
	cfg, l := childConfig(t, "crashafter", "MRTR_TEST_COUNTER="+filepath.Join(t.TempDir(), "starts"))
	cfg.CrashLoop = 4
	s := startChild(t, cfg)
	if _, err := s.Call(context.Background(), toolCall("1", "die", nil, ""), nil, nil); err == nil {
		t.Fatal("die answered")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.Health()
		if e, ok := AsError(err); ok && strings.Contains(e.Message, "crashed 4 times in a row") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Health did not report the crash loop: %v\n%s", err, l.text())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t0 := time.Now()
	_, err := s.Call(context.Background(), toolCall("2", "echo", nil, ""), nil, nil)
	if e := wantCode(t, err, CodeUnavailable); !strings.Contains(e.Message, "restarts have stopped") || time.Since(t0) > time.Second {
		t.Fatalf("call after the crash loop: %v", err)
	}
	if n := l.count("upstream restart failed"); n != 3 {
		t.Errorf("%d failed restarts logged, want 3:\n%s", n, l.text())
	}
}

func TestStdioGarbage(t *testing.T) {
	cfg, l := childConfig(t, "banner")
	s := startChild(t, cfg)
	// A line that names the call but is not JSON fails that call at once.
	_, err := s.Call(context.Background(), toolCall("1", "garbage", nil, ""), nil, nil)
	wantCode(t, err, CodeBadResponse)
	// Garbage that names no call: the call ends at its deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = s.Call(ctx, toolCall("2", "garbage-only", nil, ""), nil, nil)
	wantCode(t, err, CodeTimeout)
	if _, err := s.Call(context.Background(), toolCall("3", "echo", nil, ""), nil, nil); err != nil {
		t.Fatalf("the next call: %v", err)
	}
	txt := l.text()
	for _, want := range []string{"start=Starting my server v1.0 ...", "start=<html>oops</html>", "stdio servers must log to stderr"} {
		if !strings.Contains(txt, want) {
			t.Errorf("log lacks %q:\n%s", want, txt)
		}
	}
	if strings.Contains(txt, `"content":[`) {
		t.Errorf("a JSON-looking line reached the log:\n%s", txt)
	}
}

func TestStdioTooLarge(t *testing.T) {
	cfg, _ := childConfig(t, "ok")
	cfg.MaxMessage = 64 << 10
	s := startChild(t, cfg)
	_, err := s.Call(context.Background(), toolCall("1", "big", map[string]int{"bytes": 200 << 10}, ""), nil, nil)
	wantCode(t, err, CodeTooLarge)
	raw, err := s.Call(context.Background(), toolCall("2", "big", map[string]int{"bytes": 1000}, ""), nil, nil)
	if err != nil || len(raw) < 1000 {
		t.Fatalf("the next call: %v", err)
	}
}

// A request from the child goes to the one call in flight, whose caller
// refuses it through Send; with no caller to take it, the default refusal.
// TestStdioLegacyRoots: roots are declared to a legacy child only when
// configured; a roots/list the child sends right after initialized, when
// no call is open (as server-everything and server-filesystem do), is
// answered with an error at once: nobody waits, and nobody else's call
// gets it.
func TestStdioLegacyRoots(t *testing.T) {
	for _, roots := range []bool{false, true} {
		cfg, l := childConfig(t, "legacy")
		cfg.Roots = roots
		s := startChild(t, cfg)
		const outside = "upstream sent a server-to-client request outside a call; answered with an error"
		if roots {
			// The child asks as soon as it is initialized; a call opened
			// before that request is read would (rightly) take it.
			for deadline := time.Now().Add(10 * time.Second); l.count(outside) == 0 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
		}
		raw, err := s.Call(context.Background(), toolCall("1", "roots-at-start", nil, ""), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := decode(t, raw)
		caps, reply := string(r.Result.Structured["capabilities"]), string(r.Result.Structured["reply"])
		if strings.Contains(caps, `"roots"`) != roots || !strings.Contains(caps, `"elicitation"`) {
			t.Fatalf("roots %v: declared %s", roots, caps)
		}
		if !roots {
			if reply != `"none"` {
				t.Fatalf("asked for roots it was not offered: %s", reply)
			}
			continue
		}
		if !strings.Contains(reply, `"error"`) || !strings.Contains(reply, "outside any single call") || !strings.Contains(reply, `"id":"srv-roots-at-start"`) {
			t.Fatalf("the child's roots/list outside a call was answered %s", reply)
		}
		if l.count(outside) != 1 {
			t.Errorf("not logged:\n%s", l.text())
		}
	}
}

// TestStdioLegacyUndeclaredRoots: a legacy child that asks roots/list in
// a call though roots were not declared to it is answered by the proxy
// with an error; the call's onMessage (the client) never sees it. With
// roots declared, the call gets it.
func TestStdioLegacyUndeclaredRoots(t *testing.T) {
	for _, roots := range []bool{false, true} {
		cfg, _ := childConfig(t, "legacy")
		cfg.Roots = roots
		s := startChild(t, cfg)
		var seen bool
		raw, err := s.Call(context.Background(), toolCall("1", "ask-roots", nil, ""), nil, func(b []byte) error {
			m, err := parseMessage(b)
			if err != nil || m.method != "roots/list" {
				return nil
			}
			seen = true
			return s.Send(context.Background(), []byte(`{"jsonrpc":"2.0","id":`+string(m.value(m.id))+`,"result":{"roots":[]}}`), nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		text := decode(t, raw).Result.Content[0].Text
		if roots {
			if !seen || !strings.Contains(text, `"roots":[]`) {
				t.Fatalf("declared: seen %v, the child got %s", seen, text)
			}
			continue
		}
		if seen || !strings.Contains(text, "not declared") {
			t.Fatalf("undeclared: seen %v, the child got %s", seen, text)
		}
	}
}

// TestStdioLegacyLogToTheOnlyCall: a legacy child logs to its session,
// not to a request; with one call open, that call's onMessage gets it. A
// 2026-07-28 child (shared by every principal) never has its unrelated
// log messages handed to whichever call is open.
func TestStdioLegacyLogToTheOnlyCall(t *testing.T) {
	for _, mode := range []string{"legacy", "ok"} {
		cfg, _ := childConfig(t, mode)
		s := startChild(t, cfg)
		var logs int
		_, err := s.Call(context.Background(), toolCall("1", "progress", nil, ""), nil, func(b []byte) error {
			if bytes.Contains(b, []byte(`"notifications/message"`)) {
				logs++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]int{"legacy": 1, "ok": 0}[mode]; logs != want {
			t.Errorf("%s child: the call got %d log messages, want %d", mode, logs, want)
		}
	}
}

func TestStdioServerToClientRequest(t *testing.T) {
	cfg, _ := childConfig(t, "ok")
	s := startChild(t, cfg)
	var asked []byte
	raw, err := s.Call(context.Background(), toolCall("1", "ask", nil, ""), nil, func(b []byte) error {
		asked = b
		m, err := parseMessage(b)
		if err != nil {
			return err
		}
		return s.Send(context.Background(), RefuseServerRequest(m.value(m.id), m.method), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(asked, []byte(`"method":"elicitation/create"`)) || !bytes.Contains(asked, []byte(`"id":"srv-1"`)) {
		t.Fatalf("onMessage got %s", asked)
	}
	r := decode(t, raw)
	if !strings.Contains(r.Result.Content[0].Text, `input_required`) || !strings.Contains(r.Result.Content[0].Text, "-32601") {
		t.Fatalf("the child got %q", r.Result.Content[0].Text)
	}
	raw, err = s.Call(context.Background(), toolCall("2", "ask", nil, ""), nil, nil)
	if err != nil || !strings.Contains(decode(t, raw).Result.Content[0].Text, "input_required") {
		t.Fatalf("default refusal: %s, %v", raw, err)
	}
}

// The child's environment is exactly what was configured: never the
// proxy's keys.
func TestStdioCleanEnvironment(t *testing.T) {
	t.Setenv("MRTR_KEYS", "k4.local.c2VjcmV0")
	t.Setenv("UPSTREAM_TOKEN", "pass-me")
	env, err := StdioEnv([]string{"A=1", "B=x=y"}, []string{"UPSTREAM_TOKEN", "NOT_SET_ANYWHERE"}, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := childConfig(t, "ok", env...)
	s := startChild(t, cfg)
	raw, err := s.Call(context.Background(), toolCall("1", "env", nil, ""), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	_ = json.Unmarshal(decode(t, raw).Result.Structured["env"], &got)
	slices.Sort(got)
	want := []string{"A=1", "B=x=y", "MRTR_TEST_CHILD=ok", "UPSTREAM_TOKEN=pass-me"}
	if !slices.Equal(got, want) {
		t.Fatalf("child environment %q, want %q", got, want)
	}
}

func TestStdioEnvFlags(t *testing.T) {
	lookup := func(k string) (string, bool) {
		return map[string]string{"HOME": "/h", "MRTR_KEYS": "secret"}[k], k == "HOME" || k == "MRTR_KEYS"
	}
	for _, c := range []struct {
		set, pass []string
		want      string
	}{
		{pass: []string{"MRTR_KEYS"}, want: "never passed"},
		{set: []string{"MRTR_KEYS=x"}, want: "never passed"},
		{set: []string{"NOEQUALS"}, want: "NAME=VALUE"},
		{set: []string{"=v"}, want: "not a variable name"},
	} {
		if _, err := StdioEnv(c.set, c.pass, lookup); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%v %v: %v", c.set, c.pass, err)
		}
	}
	env, err := StdioEnv([]string{"HOME=/override"}, []string{"HOME"}, lookup)
	if err != nil || !slices.Equal(env, []string{"HOME=/override"}) {
		t.Fatalf("%q %v", env, err)
	}
}

func TestStdioStderrRateLimited(t *testing.T) {
	cfg, l := childConfig(t, "ok")
	cfg.StderrRate, cfg.StderrBurst = 1, 10
	s := startChild(t, cfg)
	if _, err := s.Call(context.Background(), toolCall("1", "stderr", map[string]int{"lines": 500}, ""), nil, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// The reader logs what it dropped when the child's stderr ends, which
	// may be just after Close returns.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(l.text(), "lines dropped") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := l.count("upstream stderr"); n < 5 || n > 15 {
		t.Fatalf("%d stderr lines logged, want about the burst of 10:\n%s", n, l.text())
	}
	if !strings.Contains(l.text(), "upstream stderr lines dropped (rate limit)") || !strings.Contains(l.text(), "line=line 0 of the child's log") {
		t.Fatalf("log:\n%s", l.text())
	}
}

func processGone(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "Z" {
			return true // dead, waiting for its reaper
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// Close stops the child and every process it started, even one that
// ignores SIGTERM and stdin's end; calls in flight fail with CodeClosed.
func TestStdioCloseKillsProcessGroup(t *testing.T) {
	cfg, _ := childConfig(t, "ignoreterm")
	cfg.ShutdownGrace = 200 * time.Millisecond
	s := startChild(t, cfg)
	pid := pidOf(t, s)
	raw, err := s.Call(context.Background(), toolCall("1", "spawn", nil, ""), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var grandchild int
	_ = json.Unmarshal(decode(t, raw).Result.Structured["pid"], &grandchild)
	if grandchild == 0 {
		t.Fatalf("spawn: %s", raw)
	}
	inflight := sleeping(s)
	t0 := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Fatalf("Close took %s", d)
	}
	wantCode(t, <-inflight, CodeClosed)
	if !processGone(pid, 2*time.Second) || !processGone(grandchild, 2*time.Second) {
		t.Fatalf("child %d or grandchild %d still running after Close", pid, grandchild)
	}
	wantCode(t, s.Health(), CodeClosed)
	_, err = s.Call(context.Background(), toolCall("3", "echo", nil, ""), nil, nil)
	wantCode(t, err, CodeClosed)
}

// A call that ends on the proxy's side tells the child, under the child's id.
func TestStdioCancelTellsChild(t *testing.T) {
	cfg, _ := childConfig(t, "ok")
	s := startChild(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := s.Call(ctx, toolCall(`"x"`, "sleep", map[string]int{"ms": 1500}, ""), nil, nil)
	wantCode(t, err, CodeTimeout)
	upstreamID := s.next.Load()
	time.Sleep(50 * time.Millisecond)
	raw, err := s.Call(context.Background(), toolCall("2", "cancelled", nil, ""), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(decode(t, raw).Result.Structured["ids"]); got != fmt.Sprintf("[%d]", upstreamID) {
		t.Fatalf("the child saw cancellations %s, want [%d]", got, upstreamID)
	}
	// The late answer of the cancelled call is dropped, not misdelivered.
	time.Sleep(1500 * time.Millisecond)
	raw, err = s.Call(context.Background(), toolCall("3", "echo", nil, ""), nil, nil)
	if err != nil || string(decode(t, raw).ID) != "3" {
		t.Fatalf("%s %v", raw, err)
	}
}

func TestRewriteRequestKeepsTheRestOfTheBytes(t *testing.T) {
	for _, c := range []struct{ in, tp, want string }{
		{`{"jsonrpc":"2.0", "id" : "a", "method":"tools/call","params":{"name":"x","arguments":{"b":1,  "a":2}}}`, "",
			`{"jsonrpc":"2.0", "id" : 9, "method":"tools/call","params":{"name":"x","arguments":{"b":1,  "a":2}}}`},
		{`{"id":1,"jsonrpc":"2.0","method":"m","params":{"_meta":{"progressToken":5,"k":"v"}}}`, "TP",
			`{"id":9,"jsonrpc":"2.0","method":"m","params":{"_meta":{"traceparent":"TP","progressToken":"mrtr-9","k":"v"}}}`},
		{`{"id":1,"jsonrpc":"2.0","method":"m","params":{"_meta":{"traceparent":"old"}}}`, "TP",
			`{"id":9,"jsonrpc":"2.0","method":"m","params":{"_meta":{"traceparent":"TP"}}}`},
		{`{"id":1,"jsonrpc":"2.0","method":"m","params":{}}`, "TP",
			`{"id":9,"jsonrpc":"2.0","method":"m","params":{"_meta":{"traceparent":"TP"}}}`},
		{`{"id":1,"jsonrpc":"2.0","method":"m"}`, "TP",
			`{"id":9,"jsonrpc":"2.0","method":"m","params":{"_meta":{"traceparent":"TP"}}}`},
	} {
		m, err := parseMessage([]byte(c.in))
		if err != nil {
			t.Fatal(err)
		}
		cl := &call{id: 9}
		out, err := rewriteRequest(m, cl, c.tp)
		if err != nil || string(out) != c.want {
			t.Errorf("%s\n got %s (%v)\nwant %s", c.in, out, err, c.want)
		}
	}
}

func TestParseMessageRefuses(t *testing.T) {
	for _, in := range []string{
		`not json`, `[]`, `{"id":1,"method":"m"}`, `{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`,
		`{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`, `{"jsonrpc":"2.0","id":{},"method":"m"}`,
		`{"jsonrpc":"2.0","method":5}`, `{"jsonrpc":"2.0","\u0069d":1,"id":2,"method":"m"}`, `{"jsonrpc":"2.0"}`,
	} {
		if m, err := parseMessage([]byte(in)); err == nil {
			t.Errorf("%s: accepted as %+v", in, m)
		}
	}
}

func FuzzStdioMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"t"}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"m","params":[]}`,
		`{"jsonrpc":"2.0","id":3,"result":{"a":"\"}"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"mrtr-1"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		idInPrefix(b)
		m, err := parseMessage(b)
		if err != nil || m.method == "" || !m.hasID {
			return
		}
		out, err := rewriteRequest(m, &call{id: 42}, "00-tp")
		if err != nil {
			return
		}
		m2, err := parseMessage(out)
		if err != nil {
			t.Fatalf("rewrite of %s is not a message: %s (%v)", b, out, err)
		}
		if m2.method != m.method || string(m2.value(m2.id)) != "42" {
			t.Fatalf("rewrite of %s: %s", b, out)
		}
		_, pms, _, err := paramsObject(m2)
		meta, ok := rawjson.Find(pms, "_meta")
		if err != nil || !ok {
			t.Fatalf("rewrite of %s lost params._meta: %s", b, out)
		}
		p, _ := m2.get("params")
		var mm map[string]any
		if json.Unmarshal(out[p.Start+meta.Start:p.Start+meta.End], &mm) != nil || mm["traceparent"] != "00-tp" {
			t.Fatalf("rewrite of %s: %s", b, out)
		}
	})
}

// TestTracedKeepsTheEra: with tracing on, the traced wrapper still tells
// the proxy that a child speaks the 2025 era (it hid it before).
func TestTracedKeepsTheEra(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	tel, err := telemetry.Setup(context.Background(), "test", "0")
	if err != nil || !tel.Enabled() {
		t.Fatalf("tracing not on: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_ = tel.Shutdown(ctx)
	})
	cfg, _ := childConfig(t, "legacy")
	d, ok := Traced(startChild(t, cfg), tel).(interface {
		Discovery() (json.RawMessage, bool)
	})
	if !ok {
		t.Fatal("the traced upstream has no Discovery")
	}
	if _, legacy := d.Discovery(); !legacy {
		t.Fatal("the traced legacy child is not legacy")
	}
}

func TestWithoutModernMeta(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":7,"io.modelcontextprotocol/clientCapabilities":{"roots":{}}},"arguments":{"a":1.50}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":7},"arguments":{"a":1.50}}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{"note":"io.modelcontextprotocol/ in a value"}}`, `{"jsonrpc":"2.0","id":1,"method":"x","params":{"note":"io.modelcontextprotocol/ in a value"}}`},
	} {
		if got := string(withoutModernMeta([]byte(c.in))); got != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

// TestStdioStreamOutlivesCallTimeout: a call marked AsStream (the proxy's
// subscriptions/listen) is not cut at CallTimeout and relays what the
// child sends later, each notification routed by its subscriptionId (the
// id the child saw) with the client's id put back; a plain call that slow
// is cut.
func TestStdioStreamOutlivesCallTimeout(t *testing.T) {
	cfg, _ := childConfig(t, "ok")
	cfg.CallTimeout = 200 * time.Millisecond
	s := startChild(t, cfg)
	var notes [][]byte
	listen := []byte(`{"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	resp, err := s.Call(AsStream(context.Background()), listen, nil, func(raw []byte) error {
		notes = append(notes, bytes.Clone(raw))
		return nil
	})
	if err != nil {
		t.Fatalf("the stream was cut: %v", err)
	}
	if len(notes) != 2 || !bytes.Contains(notes[1], []byte(`"n":2`)) || !bytes.Contains(resp, []byte(`"id":"sub-1"`)) {
		t.Fatalf("notifications %q, response %s: want n 1 and 2, then the response to sub-1", notes, resp)
	}
	for _, n := range notes {
		if !bytes.Contains(n, []byte(`"io.modelcontextprotocol/subscriptionId":"sub-1"`)) {
			t.Fatalf("notification %s does not name the client's subscription id", n)
		}
	}
	_, err = s.Call(context.Background(), listen, nil, func([]byte) error { return nil })
	wantCode(t, err, CodeTimeout)
}
